import { capacityShares } from '../../shared/model/capacity';
import { capacityBookkeeping, heldUnits } from '../../shared/model/capacity';
import { instanceSchema, type Instance } from '../../shared/model/instance';
import { storedActiveInstance } from '../fixtures/stored-items';

describe('capacityShares', () => {
  it.each([
    [0, [0, 0, 0, 0, 0, 0, 0, 0]],
    [3, [1, 1, 1, 0, 0, 0, 0, 0]],
    [8, [1, 1, 1, 1, 1, 1, 1, 1]],
    [10, [2, 2, 1, 1, 1, 1, 1, 1]],
    [50, [7, 7, 6, 6, 6, 6, 6, 6]],
    [200, [25, 25, 25, 25, 25, 25, 25, 25]],
    [900, [113, 113, 113, 113, 112, 112, 112, 112]],
    [1000, [125, 125, 125, 125, 125, 125, 125, 125]],
  ])('splits a limit of %i over 8 shards as %j', (limit, shares) => {
    expect(capacityShares(limit)).toEqual(shares);
  });

  it('splits over another number of shards', () => {
    expect(capacityShares(17, 4)).toEqual([5, 4, 4, 4]);
    expect(capacityShares(2, 1)).toEqual([2]);
  });

  it('refuses a limit that is not a non-negative integer', () => {
    expect(() => capacityShares(-1)).toThrow('a capacity limit is a non-negative integer');
    expect(() => capacityShares(1.5)).toThrow('a capacity limit is a non-negative integer');
  });
});

const small = { flavor: 's-1vcpu-2gb', vcpu: 1, ram_mb: 2048, disk_gb: 30, hourly_price: 0.01786 };
const large = { flavor: 's-2vcpu-4gb', vcpu: 2, ram_mb: 4096, disk_gb: 40, hourly_price: 0.03571 };
/** An instance stored before the pools were sharded: no shard attributes at all. */
const legacy = instanceSchema.parse(storedActiveInstance);
const sharded = (changes: Partial<Instance>): Instance => ({ ...legacy, ipv4_shard: 5, tier_shard: 2, ...changes });

describe('capacity bookkeeping on the instance', () => {
  it('reads an instance stored before sharding as holding units of the old single items', () => {
    expect([legacy.ipv4_shard, legacy.tier_shard, legacy.pending_tier_shard]).toEqual([null, null, null]);
    expect(heldUnits(legacy)).toEqual([
      { pool: { kind: 'ipv4' }, shard: null },
      { pool: { kind: 'tier', flavor: 's-1vcpu-2gb' }, shard: null },
    ]);
  });

  it('records the shards a create takes its units from', () => {
    const before = { ...legacy, capacity_held: false };
    const reserved = [
      { pool: { kind: 'ipv4' }, shard: 6 },
      { pool: { kind: 'tier', flavor: 's-1vcpu-2gb' }, shard: 0 },
    ] as const;

    expect(capacityBookkeeping(before, { capacity_held: true }, [], reserved)).toEqual({
      release: [],
      shards: { ipv4_shard: 6, tier_shard: 0, pending_tier_shard: null },
    });
  });

  it('holds a resize target on its own shard, and makes it the plan’s when the resize lands', () => {
    const accepted = capacityBookkeeping(
      sharded({}),
      { status: 'resizing', pending_plan: large },
      [],
      [{ pool: { kind: 'tier', flavor: 's-2vcpu-4gb' }, shard: 7 }],
    );
    const landed = capacityBookkeeping(
      sharded({ pending_plan: large, pending_tier_shard: 7 }),
      { plan: large, pending_plan: null },
      [{ kind: 'tier', flavor: 's-1vcpu-2gb' }],
      [],
    );

    expect(accepted).toEqual({ release: [], shards: { ipv4_shard: 5, tier_shard: 2, pending_tier_shard: 7 } });
    expect(landed).toEqual({
      release: [{ pool: { kind: 'tier', flavor: 's-1vcpu-2gb' }, shard: 2 }],
      shards: { ipv4_shard: 5, tier_shard: 7, pending_tier_shard: null },
    });
  });

  it('gives each unit back to the shard it came from, and a unit of before sharding to the old item', () => {
    const resizing = { ...legacy, plan: small, pending_plan: large, pending_tier_shard: 3 };

    expect(
      capacityBookkeeping(
        resizing,
        { status: 'failed', capacity_held: false, pending_plan: null },
        [{ kind: 'ipv4' }, { kind: 'tier', flavor: 's-1vcpu-2gb' }, { kind: 'tier', flavor: 's-2vcpu-4gb' }],
        [],
      ),
    ).toEqual({
      release: [
        { pool: { kind: 'ipv4' }, shard: null },
        { pool: { kind: 'tier', flavor: 's-1vcpu-2gb' }, shard: null },
        { pool: { kind: 'tier', flavor: 's-2vcpu-4gb' }, shard: 3 },
      ],
      shards: { ipv4_shard: null, tier_shard: null, pending_tier_shard: null },
    });
  });

  it('refuses a change that gives back a unit the instance does not hold, or keeps one unaccounted for', () => {
    expect(() => capacityBookkeeping(sharded({}), {}, [{ kind: 'tier', flavor: 's-2vcpu-4gb' }], [])).toThrow(
      'instance 41 gives back a tier s-2vcpu-4gb unit it does not hold',
    );
    expect(() => capacityBookkeeping(sharded({}), { plan: large }, [], [])).toThrow(
      'instance 41 would keep a tier s-2vcpu-4gb unit it does not hold',
    );
    expect(() => capacityBookkeeping(sharded({}), { capacity_held: false }, [], [])).toThrow(
      'instance 41 would hold ipv4, tier s-1vcpu-2gb unaccounted for',
    );
  });
});
