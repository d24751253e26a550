import type { WorkflowName } from '../workflow-names';
import type { Job } from '../model/job';

/** Where a job's execution stands: running, ended (whatever its end), or never started under the job's name. */
type ExecutionState = 'running' | 'ended' | 'absent';

/**
 * The workflow engine, as the domain sees it: start a job's workflow, ask where it stands, stop it. Step Functions
 * implements it (./step-functions.ts); the domain never names the AWS SDK.
 */
export interface WorkflowEngine {
  /** Starts the job's workflow; executions are named after their job, so a start is never doubled. */
  start(workflow: WorkflowName, job: Job, input: Record<string, unknown>, executionName?: string): Promise<void>;
  /** Where the job's execution stands now. */
  execution(job: Job): Promise<ExecutionState>;
  /** Stops the job's execution; nothing happens when it is not running. */
  stop(job: Job, cause: string): Promise<void>;
}
