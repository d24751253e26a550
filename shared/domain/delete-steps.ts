import { failedWith } from '../model/job';
import { failure } from '../model/failure';
import type { Deps } from './deps';
import { namedError } from '../model/errors';
import { updateInstanceWithRetry } from '../store/instances';
import { heldPools } from '../model/capacity';
import { finishJob, listRunningJobs } from '../store/jobs';
import { upstream } from './upstream';
import { upstreamTagOf } from './instances';
import { destroyTaggedServers } from './provisioning';
import type * as z from 'zod';
import type { DeleteStepInput, destroyServersInputSchema } from './step-inputs';

class DeleteTimeoutError extends namedError('DeleteTimeoutError') {}

/** Stops every other running lifecycle of the instance, so nothing acts on it while it is destroyed. */
export async function stopLifecyclesStep(deps: Deps, { instance_id, job_id }: DeleteStepInput): Promise<void> {
  const others = (await listRunningJobs(deps, instance_id)).filter((job) => job.job_id !== job_id && job.type !== 'delete');
  await Promise.all(
    others.map(async (job) => {
      await deps.workflows.stop(job, 'The instance was deleted');
      await finishJob(
        deps,
        job.job_id,
        failedWith(failure('interrupted', 'Cancelled: the instance was deleted')),
        deps.clock.now().toISOString(),
      );
    }),
  );
}

/** Destroys the instance's servers, then looks again: the workflow loops until none is left. */
export async function destroyServersStep(deps: Deps, input: z.output<typeof destroyServersInputSchema>): Promise<{ remaining: number }> {
  await destroyTaggedServers(deps, input.instance_id);
  const remaining = (await (await upstream(deps)).listServersByTag(upstreamTagOf(deps, input.instance_id))).length;
  const elapsedSeconds = (deps.clock.now().getTime() - Date.parse(input.started_at)) / 1000;
  if (remaining > 0 && elapsedSeconds > deps.config.actionTimeoutSeconds) {
    throw new DeleteTimeoutError(`${remaining} server(s) still present after ${Math.round(elapsedSeconds)} s`);
  }
  return { remaining };
}

/** Nothing is left upstream: give back the IPv4 address and every tier unit held, exactly once, and finish. */
export async function finishDeleteStep(deps: Deps, { instance_id, job_id }: DeleteStepInput): Promise<void> {
  await updateInstanceWithRetry(deps, instance_id, (instance) =>
    instance.status === 'deleting'
      ? {
          changes: { status: 'destroyed', capacity_held: false, pending_plan: null, active_job_id: null, ipv4: null },
          release: heldPools(instance),
          finish: { job_id, outcome: { status: 'succeeded' }, at: deps.clock.now().toISOString() },
        }
      : undefined,
  );
  await finishJob(deps, job_id, { status: 'succeeded' }, deps.clock.now().toISOString());
}

/** The instance stays deleting (and hidden); the reconciler starts a new delete for it later. */
export async function failDeleteStep(deps: Deps, { job_id }: DeleteStepInput): Promise<void> {
  await finishJob(
    deps,
    job_id,
    failedWith(failure('upstream_error', 'The server could not be destroyed yet; the delete will be retried')),
    deps.clock.now().toISOString(),
  );
}
