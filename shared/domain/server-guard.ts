import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import { updateInstanceWithRetry, type InstanceItem } from '../store/instances';
import type { UpstreamDriver, UpstreamServer } from '../upstream/driver';
import { namedError } from './errors';
import { HAS_SERVER, lostServerChange, ownershipOf, type Ownership } from './convergence';
import { upstreamTagOf } from './instances';
import { newJob } from './jobs';

/** The stored server id names no server of this instance (gone, or someone else's): nothing was sent to it. */
export class ServerNotOursError extends namedError('ServerNotOursError') {}

export const lostTexts: Record<Exclude<Ownership, 'ours'>, string> = {
  gone: 'The server no longer exists upstream',
  foreign: 'The server found upstream is not this instance’s; it was left untouched',
};

/**
 * Records that an instance has lost its server: it fails, gives back its capacity, and the job that found out (or,
 * when none was running, a `reconcile` job recorded as ended) fails with a text saying why, in one transaction.
 */
export async function loseInstance(instanceId: number, why: Exclude<Ownership, 'ours'>): Promise<void> {
  const at = new Date().toISOString();
  const error = lostTexts[why];
  await updateInstanceWithRetry(instanceId, (current) => {
    if (current.deleted_at !== null || !HAS_SERVER.includes(current.status)) return undefined;
    const { reserve, release, changes } = lostServerChange(current);
    const ended = { status: 'failed' as const, error, finished_at: at };
    return current.active_job_id
      ? { changes, reserve, release, finish: { job_id: current.active_job_id, outcome: { status: 'failed', error }, at } }
      : { changes, reserve, release, job: { ...newJob('reconcile', current), ...ended } };
  });
  countMetric(why === 'gone' ? metricNames.driftServerVanished : metricNames.foreignServerRefused);
}

/**
 * The instance's own server, read before any call that acts on it: a server that is gone or does not carry the
 * instance's tag is never acted on; that is logged and counted, and the instance is treated as lost.
 */
export async function ownServer(driver: UpstreamDriver, instance: InstanceItem): Promise<UpstreamServer> {
  if (instance.upstream_id === null) throw new ServerNotOursError(`instance ${instance.instance_id} has no server`);
  const server = await driver.getServer(instance.upstream_id);
  const ownership = ownershipOf(server, upstreamTagOf(instance.instance_id));
  if (ownership === 'ours' && server) return server;
  logger.error('the stored server is not this instance’s; not acting on it', {
    instance_id: instance.instance_id,
    server_id: instance.upstream_id,
    ownership,
  });
  await loseInstance(instance.instance_id, ownership === 'ours' ? 'gone' : ownership);
  throw new ServerNotOursError(`server ${instance.upstream_id} is ${ownership}`);
}
