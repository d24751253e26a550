import { config } from '../config';
import { hasTimeFor } from '../deadline';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import {
  CapacityExhaustedError,
  getInstanceItems,
  listUnseenSince,
  recordServerSeen,
  updateInstanceAtVersion,
  type InstanceItem,
} from '../store/instances';
import { getSweepCursor, moveSweepCursor } from '../store/sweeps';
import { upstreamForSweeps } from '../upstream';
import { UpstreamBudgetSpentError, type UpstreamDriver, type UpstreamServer } from '../upstream/driver';
import { driftOf, isSwept, type DriftKind } from './convergence';
import { catalog } from './flavors';
import { serviceTag, upstreamTagOf } from './instances';
import { loseInstance } from './server-guard';

export type DriftReport = Record<DriftKind, number>;

export interface SweepReport {
  /** Live instances whose record was made to follow their server, by kind. */
  readonly drift: DriftReport;
  /** Upstream servers of ours that are not a live instance's server (none, or a second one), destroyed. */
  readonly leakedServersDestroyed: number;
  /** Listing pages read in this run. */
  readonly pages: number;
  /** Whether this run read the listing's last page and checked the instances whose server it did not show. */
  readonly passCompleted: boolean;
}

/** Kept back from the invocation's time for the end of a pass and the cursor's write. */
const PASS_END_RESERVE_MS = 15_000;
/** Instances of one page checked at once. */
const CHECKS_AT_ONCE = 20;

const instanceTag = () => new RegExp(`^${serviceTag()}-instance-(\\d+)$`);

/** The instance id in a server's tags, or null when it carries none of ours. */
function instanceIdOf(server: UpstreamServer, tag = instanceTag()): number | null {
  const id = Number(server.tags.map((t) => tag.exec(t)?.[1]).find(Boolean));
  return Number.isSafeInteger(id) && id > 0 ? id : null;
}

/**
 * Whether a tagged server of ours is a leak: not a live instance's recorded server. A deleting instance's own
 * workflow destroys its server, and one still being created has none recorded yet; anything else is a leak.
 */
export function isLeaked(server: UpstreamServer, instance: InstanceItem | undefined): boolean {
  const live = instance && !['destroyed', 'failed'].includes(instance.status);
  return !(live && (instance.status === 'deleting' || instance.upstream_id === null || instance.upstream_id === server.id));
}

/** Each page's servers with the instances their tags name, read in batches: the leak and drift sweeps' unit of work. */
export async function withInstances(servers: readonly UpstreamServer[]) {
  const tag = instanceTag();
  const ids = [...new Set(servers.map((server) => instanceIdOf(server, tag)).filter((id): id is number => id !== null))];
  const instances = new Map((await getInstanceItems(ids)).map((instance) => [instance.instance_id, instance]));
  return servers.map((server) => {
    const instanceId = instanceIdOf(server, tag);
    return { server, instanceId, instance: instanceId === null ? undefined : instances.get(instanceId) };
  });
}

/** Settled: active or stopped with no action running, so the record must match the server as it is. */
const settled = (instance: InstanceItem) =>
  ['active', 'stopped'].includes(instance.status) && instance.deleted_at === null && instance.active_job_id === null;

/**
 * Makes a settled instance's record follow its server (null: the upstream knows no such server): a vanished server
 * (or one that is not the instance's) fails the instance and releases its capacity, billing ending when it was last
 * seen; power and size changed out of band are adopted, capacity moving to the new tier. Each repair is conditioned
 * on the version read, so an action that starts meanwhile is never overwritten from an older picture.
 */
async function followServer(instance: InstanceItem, server: UpstreamServer | null, seenAt: string, report: DriftReport): Promise<void> {
  try {
    const drift = driftOf(instance, server, upstreamTagOf(instance.instance_id), (flavor) => catalog.get(flavor));
    if (!drift) return await recordServerSeen(instance.instance_id, seenAt);
    const [kind] = drift.kinds;
    if (kind === 'vanished' || kind === 'foreign') {
      await loseInstance(instance.instance_id, kind === 'vanished' ? 'gone' : 'foreign');
    } else if (!(await updateInstanceAtVersion(instance, drift))) {
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

/** One listing page: leaks destroyed, each instance's server marked seen, settled instances made to follow it. */
async function sweepPage(driver: UpstreamDriver, servers: readonly UpstreamServer[], seenAt: string, drift: DriftReport): Promise<number> {
  let leaked = 0;
  await inGroups(await withInstances(servers), async ({ server, instanceId, instance }) => {
    if (isLeaked(server, instance)) {
      logger.warn('destroying a leaked upstream server', { server_id: server.id, instance_id: instanceId });
      await driver.deleteServer(server.id).then(
        () => (leaked += 1),
        (error: unknown) => logger.error('could not destroy a leaked server', { server_id: server.id, error }),
      );
    } else if (instance && instance.upstream_id === server.id && isSwept(instance)) {
      if (settled(instance)) await followServer(instance, server, seenAt, drift);
      else await recordServerSeen(instance.instance_id, seenAt);
    }
  });
  return leaked;
}

/**
 * The fleet sweep: one reconciler run reads the next pages of the upstream's listing of our servers (at most
 * `pages`, and only while the invocation has time), so a pass over any fleet is spread over runs and resumes where the
 * last one stopped. Each page destroys leaked servers and checks the instances it shows. When a pass reads the last
 * page, the instances whose server it did not show (their mark is older than the pass) are read from the sweep's
 * index and their server read by id: a server that lost our tags is told from one that is gone, and a server that a
 * change of the listing moved across a page boundary is simply seen there.
 */
export async function sweepFleet(nowMs = Date.now(), pages = config().upstream.sweepPagesPerRun): Promise<SweepReport> {
  const drift: DriftReport = { vanished: 0, foreign: 0, power: 0, size: 0 };
  let leakedServersDestroyed = 0;
  let read = 0;
  let passCompleted = false;
  const driver = await upstreamForSweeps();
  const cursor = await getSweepCursor();
  const seenAt = new Date(nowMs).toISOString();
  const passStartedAt = cursor.pass_started_at ?? seenAt;
  let page = cursor.next_page;
  while (read < pages && !passCompleted && hasTimeFor(PASS_END_RESERVE_MS)) {
    const listing = await driver.serverPageByTag(serviceTag(), page).catch(async (error: unknown) => {
      // The budget left is the lifecycles' own: this run's slice ends here, and the next run resumes at this page.
      if (error instanceof UpstreamBudgetSpentError) return undefined;
      // Any other failure fails the run, but the pages already swept stay swept.
      await moveSweepCursor(cursor, { next_page: page, pass_started_at: passStartedAt });
      throw error;
    });
    if (!listing) break;
    const { servers, more } = listing;
    leakedServersDestroyed += await sweepPage(driver, servers, seenAt, drift);
    read += 1;
    page += 1;
    passCompleted = !more;
  }
  if (passCompleted) {
    const unseen = (await listUnseenSince(passStartedAt)).filter(settled);
    await inGroups(unseen, async (instance) => {
      // Absent from the listing: read by id, so a server that lost our tags is told from one that is gone.
      const server = await driver.getServer(instance.upstream_id ?? 0).catch((error: unknown) => {
        logger.error('could not read an unseen instance’s server', { instance_id: instance.instance_id, error });
        return undefined;
      });
      if (server !== undefined) await followServer(instance, server, seenAt, drift);
    });
  }
  await moveSweepCursor(
    cursor,
    passCompleted ? { next_page: 1, pass_started_at: null } : { next_page: page, pass_started_at: passStartedAt },
  );
  return { drift, leakedServersDestroyed, pages: read, passCompleted };
}
