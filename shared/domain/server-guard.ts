import type { Deps } from './deps';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import { clearSlidingWindow, hitSlidingWindow } from '../store/counters';
import { clearServerAbsence, recordServerAbsent, updateInstanceWithRetry } from '../store/instances';
import { type Instance } from '../model/instance';
import { readOrphanBook, setOrphanGuard } from '../store/orphans';
import { UpstreamTransientError, type UpstreamDriver } from '../upstream/driver';
import { type UpstreamServer } from '../model/server';
import { namedError } from '../model/errors';
import { absenceConcluded, HAS_SERVER, lostServerChange, ownershipOf, type Ownership } from '../model/convergence';
import { upstreamTagOf } from './instances';
import { newJob } from './jobs';
import { failedWith } from '../model/job';
import { lostFailures } from '../model/failure';

/** The stored server id names no server of this instance (gone, or someone else's): nothing was sent to it. */
export class ServerNotOursError extends namedError('ServerNotOursError') {}

/**
 * Records that an instance has lost its server: it fails, gives back its capacity, and the job that found out (or,
 * when none was running, a `reconcile` job recorded as ended) fails with a text saying why, in one transaction.
 */
export async function loseInstance(deps: Deps, instanceId: number, why: Exclude<Ownership, 'ours'>): Promise<void> {
  const at = deps.clock.now().toISOString();
  const reason = lostFailures[why];
  await updateInstanceWithRetry(deps, instanceId, (current) => {
    if (current.deleted_at !== null || !HAS_SERVER.includes(current.status)) return undefined;
    const { reserve, release, changes } = lostServerChange(current, reason);
    const ended = { status: 'failed' as const, error: reason.message, failure: reason, finished_at: at };
    return current.active_job_id
      ? { changes, reserve, release, finish: { job_id: current.active_job_id, outcome: failedWith(reason), at } }
      : { changes, reserve, release, job: { ...newJob('reconcile', current), ...ended } };
  });
  countMetric(why === 'gone' ? metricNames.driftServerVanished : metricNames.foreignServerRefused);
}

/**
 * One read of the instance's server by id: `found`; `unconfirmed` when the upstream does not know it now (an
 * observation, recorded on the instance as evidence: it changes nothing else); `gone` only once the evidence
 * concludes it (several such reads over the window), a listing by the instance's tag does not show it either, and
 * the guard admits the loss.
 */
export type ServerReading =
  { readonly kind: 'found'; readonly server: UpstreamServer } | { readonly kind: 'unconfirmed' } | { readonly kind: 'gone' };

export async function readInstanceServer(
  deps: Deps,
  driver: UpstreamDriver,
  instance: Pick<Instance, 'instance_id' | 'upstream_id' | 'absent_since'>,
  at = deps.clock.now().toISOString(),
): Promise<ServerReading> {
  const serverId = instance.upstream_id ?? 0;
  const server = await driver.getServer(serverId);
  if (server) {
    if (instance.absent_since !== undefined) await clearServerAbsence(deps, instance.instance_id);
    return { kind: 'found', server };
  }
  const evidence = await recordServerAbsent(deps, instance.instance_id, at);
  if (evidence && absenceConcluded(evidence, deps.config.absence)) {
    const listed = (await driver.listServersByTag(upstreamTagOf(deps, instance.instance_id))).find(
      (candidate) => candidate.id === serverId,
    );
    if (listed) {
      await clearServerAbsence(deps, instance.instance_id);
      return { kind: 'found', server: listed };
    }
    if (await admitLoss(deps, at)) return { kind: 'gone' };
  }
  logger.warn('the upstream does not know the server now; recorded as evidence, not taken as gone', {
    instance_id: instance.instance_id,
    server_id: serverId,
    reads: evidence?.absent_reads,
    since: evidence?.absent_since,
  });
  countMetric(metricNames.serverAbsenceSuspected);
  return { kind: 'unconfirmed' };
}

const LOSSES_WINDOW = 'sweep#losses';
const HOUR_MS = 3_600_000;

/**
 * Stops the sweep's power-offs, destructions and losses until an operator resumes them, and alarms: too much at
 * once is more likely a fault of ours (a wrong token, a table restored from an old backup) than of the fleet.
 */
export async function tripSweepGuard(deps: Deps, at: string, reason: string): Promise<void> {
  await setOrphanGuard(deps, { halted_at: at, reason, resumed_at: null });
  countMetric(metricNames.sweepGuardTripped);
  logger.error('the sweep stopped powering off, destroying and losing servers: its blast-radius guard tripped', { reason });
}

/**
 * Lets the sweep act again after its guard tripped: the losses it counted no longer count, and its next run acts on
 * the orphans it meets however many they are (the operator has looked); the runs after keep to the limits again.
 */
export async function resumeSweepGuard(deps: Deps): Promise<void> {
  await clearSlidingWindow(deps, LOSSES_WINDOW);
  await setOrphanGuard(deps, { halted_at: null, reason: null, resumed_at: deps.clock.now().toISOString() });
}

/**
 * Whether a server concluded gone may be taken as lost now: not while the guard holds, and not past the hourly
 * allowance, which is counted across every path and run (past it, the guard trips). Until then it stays a suspicion.
 */
async function admitLoss(deps: Deps, at: string): Promise<boolean> {
  const { guard } = await readOrphanBook(deps);
  if (guard.halted_at !== null) return false;
  const limit = deps.config.absence.maxLossesPerHour;
  if ((await hitSlidingWindow(deps, LOSSES_WINDOW, limit, HOUR_MS, Date.parse(at))).allowed) return true;
  await tripSweepGuard(deps, at, `more than ${limit} servers concluded gone within an hour`);
  return false;
}

/** The upstream did not find the server this time, but its absence is not concluded: nothing was done, try later. */
class ServerAbsenceUnconfirmedError extends UpstreamTransientError {}

/**
 * The instance's own server, read before any call that acts on it: a server that does not carry the instance's tag
 * is never acted on, nor is one the upstream does not find now (ServerAbsenceUnconfirmedError, a transient error:
 * nothing changes); that is logged and counted. Only a server concluded gone, or foreign, loses the instance.
 */
export async function ownServer(deps: Deps, driver: UpstreamDriver, instance: Instance): Promise<UpstreamServer> {
  if (instance.upstream_id === null) throw new ServerNotOursError(`instance ${instance.instance_id} has no server`);
  const reading = await readInstanceServer(deps, driver, instance);
  if (reading.kind === 'unconfirmed') throw new ServerAbsenceUnconfirmedError(`server ${instance.upstream_id} not found upstream now`);
  const server = reading.kind === 'found' ? reading.server : null;
  const ownership = ownershipOf(server, upstreamTagOf(deps, instance.instance_id));
  if (ownership === 'ours' && server) return server;
  logger.error('the stored server is not this instance’s; not acting on it', {
    instance_id: instance.instance_id,
    server_id: instance.upstream_id,
    ownership,
  });
  await loseInstance(deps, instance.instance_id, ownership === 'ours' ? 'gone' : ownership);
  throw new ServerNotOursError(`server ${instance.upstream_id} is ${ownership}`);
}
