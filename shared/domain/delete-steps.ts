import { namedError } from '../model/errors';
import { config } from '../config';
import { updateInstanceWithRetry } from '../store/instances';
import { heldPools } from '../model/capacity';
import { finishJob, listRunningJobs } from '../store/jobs';
import { upstream } from './upstream';
import { upstreamTagOf } from './instances';
import { workflowEngine } from '../workflows';
import { destroyTaggedServers } from './provisioning';
import type * as z from 'zod';
import type { DeleteStepInput, destroyServersInputSchema } from './step-inputs';

class DeleteTimeoutError extends namedError('DeleteTimeoutError') {}

/** Stops every other running lifecycle of the instance, so nothing acts on it while it is destroyed. */
export async function stopLifecyclesStep({ instance_id, job_id }: DeleteStepInput): Promise<void> {
  const others = (await listRunningJobs(instance_id)).filter((job) => job.job_id !== job_id && job.type !== 'delete');
  await Promise.all(
    others.map(async (job) => {
      await workflowEngine().stop(job, 'The instance was deleted');
      await finishJob(job.job_id, { status: 'failed', error: 'Cancelled: the instance was deleted' }, new Date().toISOString());
    }),
  );
}

/** Destroys the instance's servers, then looks again: the workflow loops until none is left. */
export async function destroyServersStep(input: z.output<typeof destroyServersInputSchema>): Promise<{ remaining: number }> {
  await destroyTaggedServers(input.instance_id);
  const remaining = (await (await upstream()).listServersByTag(upstreamTagOf(input.instance_id))).length;
  const elapsedSeconds = (Date.now() - Date.parse(input.started_at)) / 1000;
  if (remaining > 0 && elapsedSeconds > config().actionTimeoutSeconds) {
    throw new DeleteTimeoutError(`${remaining} server(s) still present after ${Math.round(elapsedSeconds)} s`);
  }
  return { remaining };
}

/** Nothing is left upstream: give back the IPv4 address and every tier unit held, exactly once, and finish. */
export async function finishDeleteStep({ instance_id, job_id }: DeleteStepInput): Promise<void> {
  await updateInstanceWithRetry(instance_id, (instance) =>
    instance.status === 'deleting'
      ? {
          changes: { status: 'destroyed', capacity_held: false, pending_plan: null, active_job_id: null, ipv4: null },
          release: heldPools(instance),
          finish: { job_id, outcome: { status: 'succeeded' }, at: new Date().toISOString() },
        }
      : undefined,
  );
  await finishJob(job_id, { status: 'succeeded' }, new Date().toISOString());
}

/** The instance stays deleting (and hidden); the reconciler starts a new delete for it later. */
export async function failDeleteStep({ job_id }: DeleteStepInput): Promise<void> {
  await finishJob(
    job_id,
    { status: 'failed', error: 'The server could not be destroyed yet; the delete will be retried' },
    new Date().toISOString(),
  );
}
