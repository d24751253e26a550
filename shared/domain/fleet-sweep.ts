import type { Deps } from './deps';
import { hasTimeFor } from '../deadline';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import { getInstanceItems, listUnseenSince, recordServerSeen, updateInstanceAtVersion } from '../store/instances';
import { CapacityExhaustedError } from '../model/capacity';
import { type Instance } from '../model/instance';
import { endOrphanGuardResume, markOrphanSeen, readOrphanBook, recordOrphan, removeOrphan, type Orphan } from '../store/orphans';
import { getSweepCursor, moveSweepCursor } from '../store/sweeps';
import { upstreamForSweeps } from './upstream';
import { UpstreamBudgetSpentError, type UpstreamDriver } from '../upstream/driver';
import { type UpstreamServer } from '../model/server';
import { claimOf, driftOf, isSwept, planOrphans, readoptionOf, type DriftKind } from '../model/convergence';
import { catalog } from '../model/flavors';
import { serviceTag, upstreamTagOf } from './instances';
import { newJob } from './jobs';
import { loseInstance, readInstanceServer, tripSweepGuard } from './server-guard';
import { holdBillingPause } from './billing';
import { billingPausedAmong } from '../store/accounts';

export type DriftReport = Record<DriftKind, number>;

export interface SweepReport {
  /** Live instances whose record was made to follow their server, by kind. */
  readonly drift: DriftReport;
  /** Orphaned servers (no instance owns them) destroyed, each after its grace period. */
  readonly leakedServersDestroyed: number;
  /** Servers newly found orphaned: recorded and powered off, destroyed only after the grace period. */
  readonly orphansFound: number;
  /** Instances lost by inference whose server was found again, restored from it. */
  readonly readopted: number;
  /** Instances whose server a read by id did not find, recorded as evidence (not yet concluded gone). */
  readonly absencesSuspected: number;
  /** Whether the blast-radius guard stops this sweep's power-offs and destructions (until an operator resumes them). */
  readonly guardHalted: boolean;
  /** Listing pages read in this run. */
  readonly pages: number;
  /** Whether this run read the listing's last page and checked the instances whose server it did not show. */
  readonly passCompleted: boolean;
}

/** Kept back from the invocation's time for the end of a pass and the cursor's write. */
const PASS_END_RESERVE_MS = 15_000;
/** Instances of one page checked at once. */
const CHECKS_AT_ONCE = 20;

const instanceTag = (deps: Deps) => new RegExp(`^${serviceTag(deps)}-instance-(\\d+)$`);

/** The instance id in a server's tags, or null when it carries none of ours. */
function instanceIdOf(server: UpstreamServer, tag: RegExp): number | null {
  const id = Number(server.tags.map((t) => tag.exec(t)?.[1]).find(Boolean));
  return Number.isSafeInteger(id) && id > 0 ? id : null;
}

/** Whether a tagged server of ours is a leak: no live instance owns it, or it must be restored to its instance. */
export function isLeaked(server: UpstreamServer, instance: Instance | undefined): boolean {
  return claimOf(server, instance) !== 'owned';
}

/** Each page's servers with the instances their tags name, read in batches: the leak and drift sweeps' unit of work. */
export async function withInstances(deps: Deps, servers: readonly UpstreamServer[]) {
  const tag = instanceTag(deps);
  const ids = [...new Set(servers.map((server) => instanceIdOf(server, tag)).filter((id): id is number => id !== null))];
  const instances = new Map((await getInstanceItems(deps, ids)).map((instance) => [instance.instance_id, instance]));
  return servers.map((server) => {
    const instanceId = instanceIdOf(server, tag);
    return { server, instanceId, instance: instanceId === null ? undefined : instances.get(instanceId) };
  });
}

/** Settled: active or stopped with no action running, so the record must match the server as it is. */
const settled = (instance: Instance) =>
  ['active', 'stopped'].includes(instance.status) && instance.deleted_at === null && instance.active_job_id === null;

/**
 * Makes a settled instance's record follow its server (null: concluded gone, never from one read): a vanished server
 * (or one that is not the instance's) fails the instance and releases its capacity, billing ending when it was last
 * seen; power and size changed out of band are adopted, capacity moving to the new tier. Each repair is conditioned
 * on the version read, so an action that starts meanwhile is never overwritten from an older picture.
 */
async function followServer(
  deps: Deps,
  instance: Instance,
  server: UpstreamServer | null,
  seenAt: string,
  report: DriftReport,
): Promise<void> {
  try {
    const drift = driftOf(instance, server, upstreamTagOf(deps, instance.instance_id), (flavor) => catalog.get(flavor));
    if (!drift) return await recordServerSeen(deps, instance.instance_id, seenAt);
    const [kind] = drift.kinds;
    if (kind === 'vanished' || kind === 'foreign') {
      await loseInstance(deps, instance.instance_id, kind === 'vanished' ? 'gone' : 'foreign');
    } else if (!(await updateInstanceAtVersion(deps, instance, drift))) {
      return;
    } else {
      for (const changed of drift.kinds) countMetric(changed === 'power' ? metricNames.driftPowerChanged : metricNames.driftSizeChanged);
    }
    for (const changed of drift.kinds) report[changed] += 1;
    logger.warn('drift repaired: the record follows the upstream', { instance_id: instance.instance_id, kinds: drift.kinds });
  } catch (error) {
    if (error instanceof CapacityExhaustedError)
      logger.error('drift: the new size has no tier capacity left', { instance_id: instance.instance_id });
    else logger.error('could not compare an instance with its server', { instance_id: instance.instance_id, error });
  }
}

async function inGroups<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += CHECKS_AT_ONCE) await Promise.all(items.slice(i, i + CHECKS_AT_ONCE).map(work));
}

/** An orphan a run met, before the run decides what to do with it. */
interface MetOrphan {
  readonly server: UpstreamServer;
  readonly instanceId: number | null;
  /** Its entry in the orphan book, when it was found before. */
  readonly orphan?: Orphan;
}

/** What one reconciler run's sweep has done so far, and whether its guard stops it from doing more. */
interface SweepRun {
  readonly at: string;
  readonly nowMs: number;
  readonly drift: DriftReport;
  /** The orphans waiting when the run began, by server id. */
  readonly orphans: ReadonlyMap<number, Orphan>;
  /** Server ids the run listed. */
  readonly listed: Set<number>;
  /**
   * Orphans met, newly found or due for destruction, by server id (a listing that shifted may show one twice): acted
   * on only once the run has counted them all.
   */
  readonly met: { found: Map<number, MetOrphan>; due: Map<number, MetOrphan> };
  /** When an operator resumed the guard, if this run is the first since: it acts beyond the limits. */
  readonly resumedAt: string | null;
  destroyed: number;
  found: number;
  readopted: number;
  suspected: number;
  halted: boolean;
}

/** Stops the sweep's power-offs, destructions and losses, in this run and the next ones, until an operator resumes them. */
async function tripGuard(deps: Deps, run: SweepRun, reason: string): Promise<void> {
  if (run.halted) return;
  run.halted = true;
  await tripSweepGuard(deps, run.at, reason);
}

async function powerOffOrphan(driver: UpstreamDriver, server: UpstreamServer): Promise<void> {
  if (server.status !== 'active') return;
  await driver
    .startAction(server.id, { type: 'power_off' })
    .catch((error: unknown) => logger.error('could not power off an orphaned server', { server_id: server.id, error }));
}

/**
 * A server no instance owns takes a slow, reversible path: found, it is recorded and powered off; it is destroyed
 * only once the grace period has passed since, unless an operator spared it. Newly found and due ones are only
 * counted here: what is done to them is decided once the run has met them all (`actOnOrphans`).
 */
async function meetOrphan(deps: Deps, driver: UpstreamDriver, met: MetOrphan, run: SweepRun): Promise<void> {
  const { orphan, server } = met;
  if (!orphan) {
    if (!run.halted) run.met.found.set(server.id, met);
    return;
  }
  await markOrphanSeen(deps, server.id, run.at);
  if (orphan.spared || run.halted) return;
  if (run.nowMs - Date.parse(orphan.found_at) < deps.config.orphans.graceSeconds * 1000) return powerOffOrphan(driver, server);
  run.met.due.set(server.id, met);
}

/** Once the run has met every orphan it will: within the guard's limits, each is acted on; past them, none is. */
async function actOnOrphans(deps: Deps, driver: UpstreamDriver, run: SweepRun): Promise<void> {
  if (run.halted) return;
  const met = { found: [...run.met.found.values()], due: [...run.met.due.values()] };
  const plan = planOrphans(met, deps.config.orphans, run.resumedAt !== null);
  if (plan.trip) return tripGuard(deps, run, plan.trip);
  await inGroups(plan.found, (met) => recordFoundOrphan(deps, driver, met, run));
  await inGroups(plan.destroyed, (met) => destroyOrphan(deps, driver, met, run));
  if (run.resumedAt !== null) await endOrphanGuardResume(deps, run.resumedAt);
}

async function recordFoundOrphan(deps: Deps, driver: UpstreamDriver, { server, instanceId }: MetOrphan, run: SweepRun): Promise<void> {
  if (!(await recordOrphan(deps, { server_id: server.id, instance_id: instanceId, found_at: run.at, seen_at: run.at }))) return;
  run.found += 1;
  countMetric(metricNames.orphanServersFound);
  logger.warn('a server of ours that no instance owns: powered off, destroyed after the grace period', {
    server_id: server.id,
    instance_id: instanceId,
  });
  await powerOffOrphan(driver, server);
}

async function destroyOrphan(deps: Deps, driver: UpstreamDriver, { server, instanceId, orphan }: MetOrphan, run: SweepRun): Promise<void> {
  logger.warn('destroying an orphaned upstream server after its grace period', {
    server_id: server.id,
    instance_id: instanceId,
    found_at: orphan?.found_at,
  });
  try {
    await driver.deleteServer(server.id);
    await removeOrphan(deps, server.id, true);
    run.destroyed += 1;
    countMetric(metricNames.leakedServersDestroyed);
  } catch (error) {
    logger.error('could not destroy an orphaned server', { server_id: server.id, error });
  }
}

/**
 * An instance lost by inference whose server the listing shows after all: restored from the server (its power and
 * size, capacity held again, billed again from now), with a `reconcile` job saying so, at the version read.
 */
async function readopt(deps: Deps, instance: Instance, server: UpstreamServer, run: SweepRun): Promise<void> {
  if (server.status !== 'active' && server.status !== 'off') return;
  const change = readoptionOf(instance, server, (flavor) => catalog.get(flavor));
  try {
    const job = { ...newJob('reconcile', instance), status: 'succeeded' as const, finished_at: run.at };
    if (!(await updateInstanceAtVersion(deps, instance, { ...change, job }))) return;
  } catch (error) {
    if (error instanceof CapacityExhaustedError)
      return logger.error('a lost instance’s server was found again, but its capacity is spent', { instance_id: instance.instance_id });
    throw error;
  }
  await recordServerSeen(deps, instance.instance_id, run.at);
  run.readopted += 1;
  countMetric(metricNames.serversReadopted);
  logger.warn('an instance taken for lost has its server after all: restored from it', {
    instance_id: instance.instance_id,
    server_id: server.id,
    status: change.changes.status,
  });
}

/** One listing page: each server's claim settled (orphans on their way out, lost instances restored, owned ones checked). */
async function sweepPage(deps: Deps, driver: UpstreamDriver, servers: readonly UpstreamServer[], run: SweepRun): Promise<void> {
  const claims = await withInstances(deps, servers);
  await inGroups(claims, async ({ server, instanceId, instance }) => {
    run.listed.add(server.id);
    const claim = claimOf(server, instance);
    if (claim === 'orphan') await meetOrphan(deps, driver, { server, instanceId, orphan: run.orphans.get(server.id) }, run);
    else if (claim === 'readopt' && instance) await readopt(deps, instance, server, run);
    else if (instance && instance.upstream_id === server.id && isSwept(instance)) {
      if (settled(instance)) await followServer(deps, instance, server, run.at, run.drift);
      else await recordServerSeen(deps, instance.instance_id, run.at);
    }
  });
  await holdBillingPauses(
    deps,
    claims.flatMap(({ server, instance }) => (server.status === 'active' && instance?.upstream_id === server.id ? [instance] : [])),
  );
}

/**
 * The billing pause holds for servers that run on anyway: one whose power-off could not be recorded when the pause
 * was applied, one powered on out of band (its record has just followed it), one an action was settled to. Each
 * running server of a paused account is powered off by the system, as the pause would have (on the instance as it is
 * now: one busy or no longer active is left alone).
 */
async function holdBillingPauses(deps: Deps, running: readonly Instance[]): Promise<void> {
  if (running.length === 0) return;
  const paused = await billingPausedAmong(deps, [...new Set(running.map((instance) => instance.account_id))]);
  await inGroups(
    running.filter((instance) => paused.has(instance.account_id)),
    (instance) =>
      holdBillingPause(deps, instance.instance_id).catch((error: unknown) =>
        logger.error('could not hold a billing pause', { instance_id: instance.instance_id, error }),
      ),
  );
}

/**
 * At the end of a pass: orphans the whole pass did not list (gone, or owned after all) are forgotten; one that shows up
 * again starts its grace period anew.
 */
async function forgetUnlistedOrphans(deps: Deps, run: SweepRun, passStartedAt: string): Promise<void> {
  for (const orphan of run.orphans.values())
    if (!run.listed.has(orphan.server_id) && orphan.seen_at < passStartedAt && !orphan.spared) await removeOrphan(deps, orphan.server_id);
}

/**
 * The fleet sweep: one reconciler run reads the next pages of the upstream's listing of our servers (at most
 * `pages`, and only while the invocation has time), so a pass over any fleet is spread over runs and resumes where the
 * last one stopped. Each page settles the servers it shows: orphans go the slow way out, lost instances whose server
 * is there are restored, and owned ones are checked. When a pass reads the last page, the instances whose server it
 * did not show (their mark is older than the pass) are read from the sweep's index and their server read by id: a
 * server that lost our tags is told from one that is not found, a server not found adds to the evidence of its
 * absence (lost only once that concludes it), and one that a change of the listing moved across a page boundary is
 * simply seen there.
 */
export async function sweepFleet(
  deps: Deps,
  nowMs = deps.clock.now().getTime(),
  pages = deps.config.upstream.sweepPagesPerRun,
): Promise<SweepReport> {
  let read = 0;
  let passCompleted = false;
  const driver = await upstreamForSweeps(deps);
  const [cursor, { guard, orphans }] = await Promise.all([getSweepCursor(deps), readOrphanBook(deps)]);
  const at = new Date(nowMs).toISOString();
  const run: SweepRun = {
    at,
    nowMs,
    drift: { vanished: 0, foreign: 0, power: 0, size: 0 },
    orphans,
    listed: new Set(),
    met: { found: new Map(), due: new Map() },
    resumedAt: guard.halted_at === null ? guard.resumed_at : null,
    destroyed: 0,
    found: 0,
    readopted: 0,
    suspected: 0,
    halted: guard.halted_at !== null,
  };
  const passStartedAt = cursor.pass_started_at ?? at;
  let page = cursor.next_page;
  while (read < pages && !passCompleted && hasTimeFor(deps, PASS_END_RESERVE_MS)) {
    const listing = await driver.serverPageByTag(serviceTag(deps), page).catch(async (error: unknown) => {
      // The budget left is the lifecycles' own: this run's slice ends here, and the next run resumes at this page.
      if (error instanceof UpstreamBudgetSpentError) return undefined;
      // Any other failure fails the run, but the pages already swept stay swept.
      await actOnOrphans(deps, driver, run);
      await moveSweepCursor(deps, cursor, { next_page: page, pass_started_at: passStartedAt });
      throw error;
    });
    if (!listing) break;
    await sweepPage(deps, driver, listing.servers, run);
    read += 1;
    page += 1;
    passCompleted = !listing.more;
  }
  await actOnOrphans(deps, driver, run);
  if (passCompleted) {
    const unseen = (await listUnseenSince(deps, passStartedAt)).filter(settled);
    const runningUnseen: Instance[] = [];
    await inGroups(unseen, async (instance) => {
      // Absent from the listing: read by id, so a server that lost our tags is told from one that is not found.
      const reading = await readInstanceServer(deps, driver, instance, at).catch((error: unknown) => {
        logger.error('could not read an unseen instance’s server', { instance_id: instance.instance_id, error });
        return undefined;
      });
      if (reading?.kind === 'unconfirmed') run.suspected += 1;
      else if (reading?.kind === 'found') {
        await followServer(deps, instance, reading.server, at, run.drift);
        if (reading.server.status === 'active') runningUnseen.push(instance);
      } else if (reading) await followServer(deps, instance, null, at, run.drift);
    });
    await holdBillingPauses(deps, runningUnseen);
    await forgetUnlistedOrphans(deps, run, passStartedAt);
  }
  await moveSweepCursor(
    deps,
    cursor,
    passCompleted ? { next_page: 1, pass_started_at: null } : { next_page: page, pass_started_at: passStartedAt },
  );
  return {
    drift: run.drift,
    leakedServersDestroyed: run.destroyed,
    orphansFound: run.found,
    readopted: run.readopted,
    absencesSuspected: run.suspected,
    // Also when a loss tripped it during this run.
    guardHalted: run.halted || (await readOrphanBook(deps)).guard.halted_at !== null,
    pages: read,
    passCompleted,
  };
}

/** The orphans waiting, each with when it may be destroyed, and the sweep's guard: for operators. */
export async function orphanOverview(deps: Deps) {
  const { guard, orphans } = await readOrphanBook(deps);
  const graceMs = deps.config.orphans.graceSeconds * 1000;
  return {
    guard,
    orphans: [...orphans.values()]
      .sort((a, b) => a.found_at.localeCompare(b.found_at) || a.server_id - b.server_id)
      .map((orphan) => ({
        ...orphan,
        destroy_after: orphan.spared ? null : new Date(Date.parse(orphan.found_at) + graceMs).toISOString(),
      })),
  };
}
