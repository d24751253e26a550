import { runtimeSlot, stateMachineArn, type Platform } from '../platform';
import type { SFNClient } from '@aws-sdk/client-sfn';
import { localOverrides, notBundled } from '../aws';
import { tracer } from '../observability';
import type { Job } from '../model/job';
import type { WorkflowEngine } from './engine';
import { workflowOfJob } from './jobs-to-workflows';

/** The execution ARN of a job's workflow run: executions are named after their job. */
export function executionArnOf(deps: Platform, job: Pick<Job, 'type' | 'job_id'>, executionName = job.job_id): string {
  if (job.type === 'reconcile') throw new Error('a reconcile job has no execution');
  return `${stateMachineArn(deps, workflowOfJob[job.type]).replace(':stateMachine:', ':execution:')}:${executionName}`;
}

type StepFunctionsSdk = typeof import('@aws-sdk/client-sfn');

/** The SDK and the runtime's client, loaded on first use: only functions that start or stop workflows bundle them. */
async function loadStepFunctions(deps: Platform): Promise<{ sdk: StepFunctionsSdk; client: SFNClient }> {
  if (typeof __BUNDLES_WORKFLOWS__ === 'undefined' || __BUNDLES_WORKFLOWS__) {
    const sdk = await import('@aws-sdk/client-sfn');
    const { region, sfnEndpoint } = deps.config;
    return { sdk, client: tracer.captureAWSv3Client(new sdk.SFNClient({ region, ...localOverrides(sfnEndpoint) })) };
  }
  throw notBundled('Step Functions');
}

const stepFunctions = runtimeSlot((deps) => loadStepFunctions(deps));

/** The workflow engine on Step Functions (locally, the local endpoint speaking its protocol). */
export const stepFunctionsEngine = (deps: Platform): WorkflowEngine => ({
  async start(workflow, job, input, executionName = job.job_id) {
    const { sdk, client } = await stepFunctions.of(deps);
    await client.send(
      new sdk.StartExecutionCommand({
        stateMachineArn: stateMachineArn(deps, workflow),
        name: executionName,
        input: JSON.stringify({ instance_id: job.instance_id, job_id: job.job_id, ...input }),
      }),
    );
  },
  async execution(job) {
    const { sdk, client } = await stepFunctions.of(deps);
    try {
      const { status } = await client.send(new sdk.DescribeExecutionCommand({ executionArn: executionArnOf(deps, job) }));
      return status === 'RUNNING' ? 'running' : 'ended';
    } catch (error) {
      if (error instanceof sdk.ExecutionDoesNotExist) return 'absent';
      throw error;
    }
  },
  async stop(job, cause) {
    const { sdk, client } = await stepFunctions.of(deps);
    try {
      await client.send(new sdk.StopExecutionCommand({ executionArn: executionArnOf(deps, job), cause }));
    } catch (error) {
      if (!(error instanceof sdk.ExecutionDoesNotExist)) throw error;
    }
  },
});
