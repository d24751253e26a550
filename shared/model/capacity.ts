import { randomInt } from 'node:crypto';
import type { InstanceChanges, Instance } from './instance';

export type CapacityPool = { kind: 'ipv4' } | { kind: 'tier'; flavor: string };

/**
 * Each pool is spread over this many counter items (shards), each with its share of the pool's limit, so that
 * concurrent creates take units from different items instead of colliding on one.
 */
export const CAPACITY_SHARDS = 8;

/** Where one held unit came from: a shard, or null for the pool's single item of before sharding (see docs/architecture.md). */
export type CapacityShard = number | null;

/** One unit of a pool, as an instance holds it: the pool and the shard it was taken from. */
export interface CapacityUnit {
  readonly pool: CapacityPool;
  readonly shard: CapacityShard;
}

/**
 * Splits a pool's limit into the shards' shares: they differ by at most one and add up to the limit (the first
 * `limit mod shards` shards take one more).
 */
export function capacityShares(limit: number, shards = CAPACITY_SHARDS): number[] {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new Error('a capacity limit is a non-negative integer');
  if (!Number.isSafeInteger(shards) || shards < 1) throw new Error('a pool has at least one shard');
  const base = Math.floor(limit / shards);
  return Array.from({ length: shards }, (_, shard) => base + (shard < limit % shards ? 1 : 0));
}

export class CapacityExhaustedError extends Error {
  override readonly name = 'CapacityExhaustedError';
  constructor(readonly pool: CapacityPool['kind']) {
    super(`${pool} capacity exhausted`);
  }
}

/** The pools an instance holds a unit of right now; releasing exactly these leaves no counter drifting. */
export function heldPools(instance: Instance): CapacityPool[] {
  return heldUnits(instance).map((unit) => unit.pool);
}

/** The units an instance holds right now, each with the counter shard it came from (null: the old single item). */
export function heldUnits(
  instance: Pick<Instance, 'capacity_held' | 'plan' | 'pending_plan' | 'ipv4_shard' | 'tier_shard' | 'pending_tier_shard'>,
): CapacityUnit[] {
  return [
    ...(instance.capacity_held
      ? [
          { pool: { kind: 'ipv4' }, shard: instance.ipv4_shard } as const,
          { pool: { kind: 'tier', flavor: instance.plan.flavor }, shard: instance.tier_shard } as const,
        ]
      : []),
    ...(instance.pending_plan
      ? [{ pool: { kind: 'tier', flavor: instance.pending_plan.flavor }, shard: instance.pending_tier_shard } as const]
      : []),
  ];
}

export type ShardFields = Pick<Instance, 'ipv4_shard' | 'tier_shard' | 'pending_tier_shard'>;

const samePool = (a: CapacityPool, b: CapacityPool) => (a.kind === 'tier' && b.kind === 'tier' ? a.flavor === b.flavor : a.kind === b.kind);

const poolName = (pool: CapacityPool) => (pool.kind === 'ipv4' ? 'ipv4' : `tier ${pool.flavor}`);

/**
 * The bookkeeping of a change that moves capacity: which held units the released pools are (each goes back to the
 * shard it came from), and the instance's shard attributes afterwards, from the units it keeps and the ones just
 * taken (`reserved`, each with its shard). Throws when the change releases a unit the instance does not hold, or
 * leaves it holding units it does not account for: a counter would drift.
 */
export function capacityBookkeeping(
  instance: Instance,
  changes: InstanceChanges,
  release: readonly CapacityPool[],
  reserved: readonly CapacityUnit[],
): { release: CapacityUnit[]; shards: ShardFields } {
  const units = heldUnits(instance);
  const take = (pool: CapacityPool, what: string): CapacityShard => {
    const index = units.findIndex((unit) => samePool(unit.pool, pool));
    if (index < 0) throw new Error(`instance ${instance.instance_id} ${what} a ${poolName(pool)} unit it does not hold`);
    return units.splice(index, 1)[0]!.shard;
  };
  const released = release.map((pool) => ({ pool, shard: take(pool, 'gives back') }));
  units.push(...reserved);
  const after = { ...instance, ...changes };
  const shards: ShardFields = {
    ipv4_shard: after.capacity_held ? take({ kind: 'ipv4' }, 'would keep') : null,
    tier_shard: after.capacity_held ? take({ kind: 'tier', flavor: after.plan.flavor }, 'would keep') : null,
    pending_tier_shard: after.pending_plan ? take({ kind: 'tier', flavor: after.pending_plan.flavor }, 'would keep') : null,
  };
  if (units.length > 0) {
    throw new Error(`instance ${instance.instance_id} would hold ${units.map((unit) => poolName(unit.pool)).join(', ')} unaccounted for`);
  }
  return { release: released, shards };
}

/**
 * Picks the shards of a reservation: for each pool one shard at random among those not yet found full. Undefined
 * (with the pool) when every shard of a pool was found full.
 */
export class ShardPicker {
  private readonly full: Set<number>[];

  constructor(readonly pools: readonly CapacityPool[]) {
    this.full = pools.map(() => new Set<number>());
  }

  /** Random shards, one per pool, avoiding those found full. */
  pick(): CapacityUnit[] {
    return this.pools.map((pool, index) => {
      const open = Array.from({ length: CAPACITY_SHARDS }, (_, shard) => shard).filter((shard) => !this.full[index]!.has(shard));
      return { pool, shard: open[randomInt(open.length)]! };
    });
  }

  /**
   * Notes the picked shards found full (by their place in `picked`): whether any was, and the first pool with every
   * shard found full, if any.
   */
  noteFull(fullAt: readonly number[], picked: readonly CapacityUnit[]): { anyFull: boolean; exhausted?: CapacityPool } {
    for (const index of fullAt) this.full[index]!.add(picked[index]!.shard!);
    const anyFull = fullAt.length > 0;
    const exhausted = this.pools.find((_, index) => this.full[index]!.size >= CAPACITY_SHARDS);
    return { anyFull, ...(exhausted ? { exhausted } : {}) };
  }
}

/** The shard attributes that differ from what the instance has (nothing is written for a change that moves nothing). */
export function changedShards(instance: Instance, shards: ShardFields): Partial<ShardFields> {
  return Object.fromEntries(Object.entries(shards).filter(([key, value]) => instance[key as keyof ShardFields] !== value));
}

export type ShardField = keyof ShardFields;

/** The units an instance holds of the pools' old single items, by the attribute that would record their shard. */
export function unitsOfOldItems(instance: Instance): { field: ShardField; pool: CapacityPool }[] {
  const slots: { field: ShardField; pool: CapacityPool | undefined }[] = [
    { field: 'ipv4_shard', pool: instance.capacity_held ? { kind: 'ipv4' } : undefined },
    { field: 'tier_shard', pool: instance.capacity_held ? { kind: 'tier', flavor: instance.plan.flavor } : undefined },
    { field: 'pending_tier_shard', pool: instance.pending_plan ? { kind: 'tier', flavor: instance.pending_plan.flavor } : undefined },
  ];
  return slots.flatMap(({ field, pool }) => (pool && instance[field] === null ? [{ field, pool }] : []));
}
