import { stateMachineArn, type Platform } from '../platform';
import { DescribeExecutionCommand, ExecutionDoesNotExist, StartExecutionCommand, StopExecutionCommand } from '@aws-sdk/client-sfn';
import type { Job } from '../model/job';
import type { WorkflowEngine } from './engine';
import { workflowOfJob } from './jobs-to-workflows';

/** The execution ARN of a job's workflow run: executions are named after their job. */
export function executionArnOf(deps: Platform, job: Pick<Job, 'type' | 'job_id'>, executionName = job.job_id): string {
  if (job.type === 'reconcile') throw new Error('a reconcile job has no execution');
  return `${stateMachineArn(deps, workflowOfJob[job.type]).replace(':stateMachine:', ':execution:')}:${executionName}`;
}

/** The workflow engine on Step Functions (locally, the local endpoint speaking its protocol). */
export const stepFunctionsEngine = (deps: Platform): WorkflowEngine => ({
  async start(workflow, job, input, executionName = job.job_id) {
    await deps.sfn.send(
      new StartExecutionCommand({
        stateMachineArn: stateMachineArn(deps, workflow),
        name: executionName,
        input: JSON.stringify({ instance_id: job.instance_id, job_id: job.job_id, ...input }),
      }),
    );
  },
  async isRunning(job) {
    try {
      const { status } = await deps.sfn.send(new DescribeExecutionCommand({ executionArn: executionArnOf(deps, job) }));
      return status === 'RUNNING';
    } catch (error) {
      if (error instanceof ExecutionDoesNotExist) return false;
      throw error;
    }
  },
  async stop(job, cause) {
    try {
      await deps.sfn.send(new StopExecutionCommand({ executionArn: executionArnOf(deps, job), cause }));
    } catch (error) {
      if (!(error instanceof ExecutionDoesNotExist)) throw error;
    }
  },
});
