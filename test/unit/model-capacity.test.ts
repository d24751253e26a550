import { describe, expect, it } from 'vitest';
import {
  CapacityExhaustedError,
  changedShards,
  heldPools,
  ShardPicker,
  unitsOfOldItems,
  type CapacityPool,
} from '../../shared/model/capacity';
import { instanceSchema, type Instance } from '../../shared/model/instance';
import { storedActiveInstance } from '../fixtures/stored-items';

const ipv4: CapacityPool = { kind: 'ipv4' };
const small: CapacityPool = { kind: 'tier', flavor: 's-1vcpu-2gb' };
const largePlan = { flavor: 's-2vcpu-4gb', vcpu: 2, ram_mb: 4096, disk_gb: 40, hourly_price: 0.03571 };
/** Stored before the pools were sharded: every unit it holds is on a pool's old single item. */
const legacy = instanceSchema.parse(storedActiveInstance);
const sharded = (changes: Partial<Instance>): Instance => ({ ...legacy, ipv4_shard: 5, tier_shard: 2, ...changes });

describe('ShardPicker', () => {
  it('picks one shard of each pool, in pool order, from the eight', () => {
    const picked = new ShardPicker([ipv4, small]).pick();

    expect(picked.map((unit) => unit.pool)).toEqual([ipv4, small]);
    for (const unit of picked) expect(unit.shard).toSatisfy((shard: number) => Number.isInteger(shard) && shard >= 0 && shard < 8);
  });

  it('never picks a shard again once it was found full', () => {
    const picker = new ShardPicker([ipv4]);
    for (let shard = 0; shard < 7; shard++) picker.noteFull([0], [{ pool: ipv4, shard }]);

    const picks = Array.from({ length: 20 }, () => picker.pick()[0]!.shard);

    expect(new Set(picks)).toEqual(new Set([7]));
  });

  it('says nothing was full when the transaction failed for another reason', () => {
    const picker = new ShardPicker([ipv4, small]);

    expect(picker.noteFull([], picker.pick())).toEqual({ anyFull: false });
  });

  it('names the pool whose every shard was found full', () => {
    const picker = new ShardPicker([ipv4, small]);
    let outcome: ReturnType<ShardPicker['noteFull']> = { anyFull: false };

    for (let shard = 0; shard < 8; shard++)
      outcome = picker.noteFull(
        [1],
        [
          { pool: ipv4, shard: 0 },
          { pool: small, shard },
        ],
      );

    expect(outcome).toEqual({ anyFull: true, exhausted: small });
  });
});

describe('CapacityExhaustedError', () => {
  it('names the pool in its message, under a name workflows can match', () => {
    const error = new CapacityExhaustedError('ipv4');

    expect([error.name, error.message, error.pool]).toEqual(['CapacityExhaustedError', 'ipv4 capacity exhausted', 'ipv4']);
  });
});

describe('heldPools', () => {
  it('is the IPv4 pool and the plan tier while capacity is held, plus the pending plan tier during a resize', () => {
    expect(heldPools(legacy)).toEqual([ipv4, small]);
    expect(heldPools({ ...legacy, pending_plan: largePlan })).toEqual([ipv4, small, { kind: 'tier', flavor: 's-2vcpu-4gb' }]);
  });

  it('is nothing once the capacity is given back', () => {
    expect(heldPools({ ...legacy, capacity_held: false })).toEqual([]);
  });
});

describe('changedShards', () => {
  it('keeps only the shard attributes that differ from the instance', () => {
    expect(changedShards(sharded({}), { ipv4_shard: 5, tier_shard: 6, pending_tier_shard: null })).toEqual({ tier_shard: 6 });
  });

  it('is empty when nothing moves', () => {
    expect(changedShards(sharded({}), { ipv4_shard: 5, tier_shard: 2, pending_tier_shard: null })).toEqual({});
  });
});

describe('unitsOfOldItems', () => {
  it('lists each unit held of an old single item by the attribute that will record its shard', () => {
    expect(unitsOfOldItems({ ...legacy, pending_plan: largePlan })).toEqual([
      { field: 'ipv4_shard', pool: ipv4 },
      { field: 'tier_shard', pool: small },
      { field: 'pending_tier_shard', pool: { kind: 'tier', flavor: 's-2vcpu-4gb' } },
    ]);
  });

  it('is empty for an instance whose units are all on shards, or that holds none', () => {
    expect(unitsOfOldItems(sharded({}))).toEqual([]);
    expect(unitsOfOldItems({ ...legacy, capacity_held: false })).toEqual([]);
  });
});
