import type { Deps } from './deps';
import { capacityShardName, moveLimitToShards, readCapacity, readCapacityShards } from '../store/counters';
import { type CapacityPool } from '../model/capacity';
import { getInstanceItem, moveUnitsToShards, scanInstancesByStatus } from '../store/instances';
import { heldUnits } from '../model/capacity';
import { upstream } from './upstream';
import { driftOf, type DriftKind } from '../model/convergence';
import { catalog, flavorIds } from '../model/flavors';
import { instanceStatuses } from '../model/instance-status';
import { upstreamTagOf } from './instances';
import { findLeakedServers } from './reconciler';
import { retry, retryPolicies, TRY_AGAIN } from '../retry';

export interface AuditReport {
  /** Settled live instances whose record differs from their server, and how. */
  readonly instances: { instance_id: number; kinds: DriftKind[] }[];
  /** Our servers that are not a live instance's server. */
  readonly leaked_servers: { server_id: number; instance_id: number | null }[];
  /** Counter items (each shard of a pool, and its old single item) whose units in use differ from what the instances on record hold from them. */
  readonly counters: { counter: string; used: number; held: number }[];
}

const pools = (): CapacityPool[] => [{ kind: 'ipv4' }, ...flavorIds.map((flavor) => ({ kind: 'tier', flavor }) as const)];

/** The capacity of every pool, summed over its shards: `{ipv4: {limit, used}, tiers: {<flavor>: {limit, used}}}`. */
export async function capacityOverview(deps: Deps) {
  const [ipv4, ...tiers] = await Promise.all(pools().map((pool) => readCapacity(deps, pool)));
  return { ipv4: ipv4!, tiers: Object.fromEntries(flavorIds.map((flavor, i) => [flavor, tiers[i]!])) };
}

/** Compares every live instance with its server and every counter with what instances hold; changes nothing. */
export async function audit(deps: Deps): Promise<AuditReport> {
  const everyInstance = await scanInstancesByStatus(deps, instanceStatuses);
  const driver = await upstream(deps);
  const instances: AuditReport['instances'] = [];
  for (const instance of everyInstance) {
    const settled = ['active', 'stopped'].includes(instance.status) && instance.active_job_id === null && instance.deleted_at === null;
    if (!settled || instance.upstream_id === null) continue;
    const server = await driver.getServer(instance.upstream_id);
    const drift = driftOf(instance, server, upstreamTagOf(deps, instance.instance_id), (flavor) => catalog.get(flavor));
    if (drift) instances.push({ instance_id: instance.instance_id, kinds: drift.kinds });
  }
  const leaked = (await findLeakedServers(deps)).map(({ server, instanceId }) => ({ server_id: server.id, instance_id: instanceId }));
  const held = new Map<string, number>();
  for (const { pool, shard } of everyInstance.flatMap(heldUnits)) {
    const counter = capacityShardName(pool, shard);
    held.set(counter, (held.get(counter) ?? 0) + 1);
  }
  const counters: AuditReport['counters'] = [];
  for (const pool of pools()) {
    for (const { counter, used } of await readCapacityShards(deps, pool)) {
      if (used !== (held.get(counter) ?? 0)) counters.push({ counter, used, held: held.get(counter) ?? 0 });
    }
  }
  return { instances, leaked_servers: leaked, counters };
}

export interface CapacityMigration {
  /** Pools whose operator-set limit moved from the old single item onto the shards. */
  readonly limits_moved: number;
  /** Pools whose old limit was dropped because the shards had been sized since. */
  readonly limits_dropped: number;
  readonly instances_moved: number;
  /** Units moved from the old single items onto shards. */
  readonly units_moved: number;
  /** Units left on the old single items because their pool had no shard with room (still given back there). */
  readonly units_left: number;
}

/**
 * Moves what the pools' old single items hold (before sharding) onto the shards: first each operator-set limit, as
 * shares, then every unit an instance on record holds of an old item, one conditional transaction per instance.
 * Safe to run again, and while the service runs: a moved unit never moves twice, and an instance that changed
 * meanwhile is read again.
 */
export async function moveCapacityToShards(deps: Deps): Promise<CapacityMigration> {
  let limitsMoved = 0;
  let limitsDropped = 0;
  for (const pool of pools()) {
    const outcome = await moveLimitToShards(deps, pool);
    if (outcome === 'moved') limitsMoved += 1;
    if (outcome === 'dropped') limitsDropped += 1;
  }
  let instancesMoved = 0;
  let unitsMoved = 0;
  let unitsLeft = 0;
  const holding = (await scanInstancesByStatus(deps, instanceStatuses)).filter((instance) =>
    heldUnits(instance).some((unit) => unit.shard === null),
  );
  for (const read of holding) {
    const outcome = await retry(
      retryPolicies.versionConflict,
      async (n) => {
        const instance = n === 1 ? read : await getInstanceItem(deps, read.instance_id);
        if (!instance) return undefined;
        return (await moveUnitsToShards(deps, instance)) ?? TRY_AGAIN;
      },
      {
        exhausted: () => {
          throw new Error(`instance ${read.instance_id} kept changing; run the migration again`);
        },
      },
    );
    if (!outcome) continue;
    if (outcome.moved > 0) instancesMoved += 1;
    unitsMoved += outcome.moved;
    unitsLeft += outcome.left;
  }
  return {
    limits_moved: limitsMoved,
    limits_dropped: limitsDropped,
    instances_moved: instancesMoved,
    units_moved: unitsMoved,
    units_left: unitsLeft,
  };
}
