import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';
import { tableNames, tables } from '../../shared/tables';
import { lifecycleWorkflowNames, workflowEnvVars } from '../../shared/workflow-names';
import { localHandlerEnv } from '../local/handler-env';
import { outputNames } from '../outputs';

/**
 * Where the operations CLI acts: the environment that points shared/config at a service, either the one
 * `npm start` runs (described by its runtime.json) or a deployed stack (described by its CloudFormation outputs).
 */
export type TargetEnv = Record<string, string>;

const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

/** What `npm start` writes to `.local/runtime.json` that the CLI needs. */
const runtimeFileSchema = z.object({
  dynamodb_endpoint: z.string(),
  sfn_endpoint: z.string(),
  simulator_url: z.string(),
  upstream_token: z.string(),
  table_prefix: z.string(),
  secrets_key_file: z.string(),
});

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function localTarget(file = process.env.OPS_RUNTIME_FILE || resolve(repositoryRoot, '.local/runtime.json')): Promise<TargetEnv> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new Error('no local service found: start it with npm start');
  }
  const parsed = runtimeFileSchema.safeParse(parseJson(text));
  if (!parsed.success) throw new Error(`${file} does not describe a local service: start it again with npm start`);
  const runtime = parsed.data;
  return {
    // The same settings the local runtime gives its handlers.
    ...localHandlerEnv({
      dynamodbEndpoint: runtime.dynamodb_endpoint,
      sfnEndpoint: runtime.sfn_endpoint,
      simulatorUrl: runtime.simulator_url,
      upstreamToken: runtime.upstream_token,
      tablePrefix: runtime.table_prefix,
      secretsKeyFile: runtime.secrets_key_file,
    }),
    UPSTREAM_TOKEN_SECRET_ARN: '',
  };
}

/** The environment for a stack's resources, from its outputs; fails naming every output that is missing. */
export function stackEnv(stackName: string, region: string, outputs: Readonly<Record<string, string>>): TargetEnv {
  const wanted: Record<string, string> = {
    UPSTREAM_TOKEN_SECRET_ARN: outputNames.upstreamTokenSecretArn,
    UPSTREAM_BASE_URL: outputNames.upstreamBaseUrl,
    ...Object.fromEntries(tableNames.map((t) => [tables[t].envVar, outputNames.table(t)])),
    // The lifecycles the operator's commands start (account reviews run in process: `billing review`).
    ...Object.fromEntries(lifecycleWorkflowNames.map((w) => [workflowEnvVars[w], outputNames.stateMachine(w)])),
  };
  const missing = Object.values(wanted).filter((output) => !outputs[output]);
  if (missing.length > 0) throw new Error(`stack ${stackName} has no output ${missing.join(', ')}: is it this service's stack?`);
  return {
    AWS_REGION: region,
    // Empty endpoints and token: the AWS services themselves, and the token from the stack's secret.
    DYNAMODB_ENDPOINT: '',
    SFN_ENDPOINT: '',
    UPSTREAM_TOKEN: '',
    ...Object.fromEntries(Object.entries(wanted).map(([envVar, output]) => [envVar, outputs[output] ?? ''])),
  };
}

async function stackTarget(stackName: string): Promise<TargetEnv> {
  // The region shared/config falls back to as well, so the stack and its tables are looked up in the same place.
  const region = process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || 'us-east-1';
  // Loaded only here: the local target never needs it, and it is a large client to load on every run.
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const client = new CloudFormationClient({ region });
  let outputs: Record<string, string>;
  try {
    const { Stacks } = await client.send(new DescribeStacksCommand({ StackName: stackName }));
    outputs = Object.fromEntries((Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey ?? '', o.OutputValue ?? '']));
  } catch (error) {
    throw new Error(`could not read stack ${stackName} in ${region}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  } finally {
    client.destroy();
  }
  return stackEnv(stackName, region, outputs);
}

export const resolveTarget = (stackName: string | undefined): Promise<TargetEnv> =>
  stackName === undefined ? localTarget() : stackTarget(stackName);
