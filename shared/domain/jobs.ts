import type { Deps } from './deps';
import { randomUUID } from 'node:crypto';
import { getJob, listInstanceJobs } from '../store/jobs';
import { getOwnedInstance } from '../store/instances';
import { type Job } from '../model/job';
import type { Instance } from '../model/instance';
import type { JobView } from '../schemas/jobs';
import { instanceNotFound, notFound } from '../model/errors';
import { toJobView } from './views';

export function newJob(type: Job['type'], instance: Pick<Instance, 'instance_id' | 'account_id'>): Job {
  return {
    job_id: randomUUID(),
    type,
    instance_id: instance.instance_id,
    account_id: instance.account_id,
    status: 'running',
    started_at: new Date().toISOString(),
    finished_at: null,
    error: null,
    failure: null,
  };
}

/** Job ids are UUIDs; anything else cannot name a job (and is never looked up). */
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** GET /jobs/{id}: the caller's own jobs only; anyone else's is the same 404 as a missing one. */
export async function getJobView(deps: Deps, accountId: string, jobId: string | undefined): Promise<JobView> {
  const job = jobId && JOB_ID.test(jobId) ? await getJob(deps, jobId) : undefined;
  if (!job || job.account_id !== accountId) throw notFound('Job not found');
  return toJobView(job);
}

/** How many of an instance's jobs its list holds: the latest ones. */
const INSTANCE_JOBS_LISTED = 50;

/** GET /instances/{id}/jobs: the caller's instance's latest jobs, newest first; anyone else's instance is 404. */
export async function listInstanceJobViews(deps: Deps, accountId: string, instanceId: number | undefined): Promise<JobView[]> {
  const instance = instanceId === undefined ? undefined : await getOwnedInstance(deps, instanceId, accountId);
  if (!instance) throw instanceNotFound();
  return (await listInstanceJobs(deps, instance.instance_id, INSTANCE_JOBS_LISTED)).map(toJobView);
}
