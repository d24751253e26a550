import { tableNames, tables, type TableName } from '../../shared/tables';
import { workflowEnvVars, workflowNames } from '../../shared/workflow-names';

/**
 * How the local runtime names things and what environment its handlers get. Kept apart from the runtime itself so
 * that tools (the operations CLI) can point the same domain code at a running local service cheaply.
 */
const REGION = 'us-east-1';
const ACCOUNT = '000000000000';

/** An ARN in the local runtime's pretend account and region. */
export const localArn = (service: string, resource: string) => `arn:aws:${service}:${REGION}:${ACCOUNT}:${resource}`;
export const localStateMachineArn = (name: string) => localArn('states', `stateMachine:${name}`);

export function localTableNames(prefix: string): Record<TableName, string> {
  return Object.fromEntries(tableNames.map((t) => [t, `${prefix}-${t}`])) as Record<TableName, string>;
}

export interface LocalEndpoints {
  readonly dynamodbEndpoint: string;
  readonly sfnEndpoint: string;
  readonly simulatorUrl: string;
  readonly upstreamToken: string;
  /** The port the simulated servers answer SSH on (the simulator's own number; 22 on AWS). */
  readonly sshPort?: number | undefined;
  readonly tablePrefix: string;
  /** The raw AES key that seals customers' secrets locally (KMS does on AWS). */
  readonly secretsKeyFile: string;
}

/** The environment a handler gets locally: the AWS one, with local endpoints and names. */
export function localHandlerEnv(endpoints: LocalEndpoints): Record<string, string> {
  const names = localTableNames(endpoints.tablePrefix);
  return {
    STAGE: 'local',
    AWS_REGION: REGION,
    DYNAMODB_ENDPOINT: endpoints.dynamodbEndpoint,
    SFN_ENDPOINT: endpoints.sfnEndpoint,
    UPSTREAM_BASE_URL: endpoints.simulatorUrl,
    UPSTREAM_TOKEN: endpoints.upstreamToken,
    ...(endpoints.sshPort === undefined ? {} : { SSH_PORT: String(endpoints.sshPort) }),
    SECRETS_KEY_FILE: endpoints.secretsKeyFile,
    ...Object.fromEntries(tableNames.map((t) => [tables[t].envVar, names[t]])),
    ...Object.fromEntries(workflowNames.map((w) => [workflowEnvVars[w], localStateMachineArn(w)])),
  };
}
