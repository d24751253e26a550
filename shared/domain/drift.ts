import { countMetric, logger, metricNames } from '../observability';
import { CapacityExhaustedError, recordServerSeen, scanInstancesByStatus, updateInstanceAtVersion } from '../store/instances';
import { upstream } from '../upstream';
import type { UpstreamServer } from '../upstream/driver';
import { driftOf, type DriftKind } from './convergence';
import { catalog } from './flavors';
import { serviceTag, upstreamTagOf } from './instances';
import { loseInstance } from './server-guard';

export type DriftReport = Record<DriftKind, number>;

/**
 * Compares every settled live instance (active or stopped, no action running) with its server and makes the record
 * follow: a vanished server (or one that is not the instance's) fails the instance and releases its capacity, billing
 * ending when it was last seen; power and size changed out of band are adopted, capacity moving to the new tier.
 * Instances are read before the servers, and each repair is conditioned on the version read, so an action that
 * starts meanwhile is never overwritten from an older picture.
 */
export async function repairDrift(nowMs = Date.now()): Promise<DriftReport> {
  const report: DriftReport = { vanished: 0, foreign: 0, power: 0, size: 0 };
  const settled = (await scanInstancesByStatus(['active', 'stopped'])).filter(
    (instance) => instance.deleted_at === null && instance.active_job_id === null && instance.upstream_id !== null,
  );
  const driver = await upstream();
  const servers = new Map<number, UpstreamServer>();
  for await (const page of driver.serverPagesByTag(serviceTag())) for (const server of page) servers.set(server.id, server);
  const seenAt = new Date(nowMs).toISOString();
  for (const instance of settled) {
    try {
      const id = instance.upstream_id ?? 0;
      // Absent from the listing: read it by id, so a server that lost our tags is told from one that is gone.
      const server = servers.get(id) ?? (await driver.getServer(id));
      const drift = driftOf(instance, server, upstreamTagOf(instance.instance_id), (flavor) => catalog.get(flavor));
      if (!drift) {
        await recordServerSeen(instance.instance_id, seenAt);
        continue;
      }
      const [kind] = drift.kinds;
      if (kind === 'vanished' || kind === 'foreign') {
        await loseInstance(instance.instance_id, kind === 'vanished' ? 'gone' : 'foreign');
      } else if (!(await updateInstanceAtVersion(instance, drift))) {
        continue;
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
  return report;
}
