import type { WorkflowName } from '../workflow-names';
import type { Job } from '../model/job';

/**
 * The workflow engine, as the domain sees it: start a job's workflow, ask whether it still runs, stop it. Step
 * Functions implements it (./step-functions.ts); the domain never names the AWS SDK.
 */
export interface WorkflowEngine {
  /** Starts the job's workflow; executions are named after their job, so a start is never doubled. */
  start(workflow: WorkflowName, job: Job, input: Record<string, unknown>, executionName?: string): Promise<void>;
  /** Whether the job's execution is running now; false when it ended or never existed. */
  isRunning(job: Job): Promise<boolean>;
  /** Stops the job's execution; nothing happens when it is not running. */
  stop(job: Job, cause: string): Promise<void>;
}
