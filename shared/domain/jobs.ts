import { randomUUID } from 'node:crypto';
import { StartExecutionCommand } from '@aws-sdk/client-sfn';
import { sfn } from '../aws';
import { stateMachineArn } from '../config';
import { getJob, type Job } from '../store/jobs';
import type { InstanceItem } from '../store/instances';
import type { WorkflowName } from '../../infra/workflows';
import type { JobView } from '../schemas/jobs';
import { notFound } from './errors';

/** Jobs that run a workflow (a `reconcile` job is recorded already ended). */
export type WorkflowJobType = Exclude<Job['type'], 'reconcile'>;

export const workflowOfJob: Record<WorkflowJobType, WorkflowName> = {
  provision: 'provision',
  delete: 'delete',
  power_on: 'power',
  power_off: 'power',
  reboot: 'power',
  resize: 'resize',
};

export function newJob(type: Job['type'], instance: Pick<InstanceItem, 'instance_id' | 'account_id'>): Job {
  return {
    job_id: randomUUID(),
    type,
    instance_id: instance.instance_id,
    account_id: instance.account_id,
    status: 'running',
    started_at: new Date().toISOString(),
    finished_at: null,
    error: null,
  };
}

/** The execution ARN of a job's workflow run: executions are named after their job. */
export function executionArnOf(job: Pick<Job, 'type' | 'job_id'>, executionName = job.job_id): string {
  if (job.type === 'reconcile') throw new Error('a reconcile job has no execution');
  return `${stateMachineArn(workflowOfJob[job.type]).replace(':stateMachine:', ':execution:')}:${executionName}`;
}

/** Starts the job's workflow; the execution is named after the job, so a start is never doubled. */
export async function startWorkflow(workflow: WorkflowName, job: Job, input: Record<string, unknown>, executionName = job.job_id): Promise<void> {
  await sfn().send(
    new StartExecutionCommand({
      stateMachineArn: stateMachineArn(workflow),
      name: executionName,
      input: JSON.stringify({ instance_id: job.instance_id, job_id: job.job_id, ...input }),
    }),
  );
}

/** Job ids are UUIDs; anything else cannot name a job (and is never looked up). */
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** GET /jobs/{id}: the caller's own jobs only; anyone else's is the same 404 as a missing one. */
export async function getJobView(accountId: string, jobId: string | undefined): Promise<JobView> {
  const job = jobId && JOB_ID.test(jobId) ? await getJob(jobId) : undefined;
  if (!job || job.account_id !== accountId) throw notFound('Job not found');
  const { account_id: _owner, ...view } = job;
  return view;
}
