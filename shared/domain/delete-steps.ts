import { failedWith } from '../model/job';
import { failure } from '../model/failure';
import type { Deps } from './deps';
import { namedError } from '../model/errors';
import { clearServerAbsence, getInstanceItem, recordServerAbsent, updateInstanceWithRetry } from '../store/instances';
import { heldPools } from '../model/capacity';
import { finishJob, listRunningJobs } from '../store/jobs';
import { upstream } from './upstream';
import { upstreamTagOf } from './instances';
import { destroyUnrecordedServers } from './provisioning';
import { destructionConfirmed, ownershipOf } from '../model/convergence';
import type { Instance } from '../model/instance';
import type { UpstreamDriver } from '../upstream/driver';
import { logger } from '../observability';
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

/**
 * Destroys the instance's servers and counts those not yet confirmed gone: the workflow loops until none is left. The
 * recorded server is destroyed by id and confirmed gone only by reads by id over time (a listing that leaves it out
 * proves nothing); any other server its tag lists is destroyed too, and counts while it is listed.
 */
export async function destroyServersStep(deps: Deps, input: z.output<typeof destroyServersInputSchema>): Promise<{ remaining: number }> {
  const instance = await getInstanceItem(deps, input.instance_id);
  const driver = await upstream(deps);
  const [unrecorded, recorded] = instance
    ? await Promise.all([destroyUnrecordedServers(deps, driver, instance), destroyRecordedServer(deps, driver, instance, input.started_at)])
    : [0, 0];
  const remaining = unrecorded + recorded;
  const elapsedSeconds = (deps.clock.now().getTime() - Date.parse(input.started_at)) / 1000;
  if (remaining > 0 && elapsedSeconds > deps.config.actionTimeoutSeconds) {
    throw new DeleteTimeoutError(`${remaining} server(s) still present after ${Math.round(elapsedSeconds)} s`);
  }
  return { remaining };
}

/**
 * One round on the instance's recorded server: 1 while it may still exist, 0 once confirmed destroyed. Found, it is
 * destroyed by id (unless it is not this instance's: never acted on); not found, that is recorded as evidence, and the
 * destroy is sent all the same at the first such read (a 404 may hide a server that is there).
 */
async function destroyRecordedServer(deps: Deps, driver: UpstreamDriver, instance: Instance, deleteStartedAt: string): Promise<number> {
  const serverId = instance.upstream_id;
  if (serverId === null) return 0;
  const staleEvidence = instance.absent_since !== undefined && Date.parse(instance.absent_since) < Date.parse(deleteStartedAt);
  if (staleEvidence) await clearServerAbsence(deps, instance.instance_id);
  const server = await driver.getServer(serverId);
  if (server) {
    if (ownershipOf(server, upstreamTagOf(deps, instance.instance_id)) !== 'ours') {
      logger.error('the stored server is not this instance’s; not destroying it', {
        instance_id: instance.instance_id,
        server_id: serverId,
      });
      return 0;
    }
    if (instance.absent_since !== undefined && !staleEvidence) await clearServerAbsence(deps, instance.instance_id);
    await driver.deleteServer(serverId);
    return 1;
  }
  const evidence = await recordServerAbsent(deps, instance.instance_id, deps.clock.now().toISOString());
  if (evidence?.absent_reads === 1) await driver.deleteServer(serverId);
  return evidence && destructionConfirmed(evidence, deleteStartedAt, deps.config.destruction) ? 0 : 1;
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
