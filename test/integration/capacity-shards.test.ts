import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { audit, moveCapacityToShards } from '../../shared/domain/audit';
import { newJob } from '../../shared/domain/jobs';
import { capacityShardName, setCapacityLimit } from '../../shared/store/counters';
import { CAPACITY_SHARDS, type CapacityPool } from '../../shared/model/capacity';
import { getInstanceItem, insertInstanceReservingCapacity } from '../../shared/store/instances';
import { CapacityExhaustedError } from '../../shared/model/capacity';
import { instanceSchema, type Instance } from '../../shared/model/instance';
import { storedActiveInstance } from '../fixtures/stored-items';
import { capacityCounters, capacityHeldByInstances, capacityShardItems, capacityUsed } from '../support/capacity';
import { useTestRuntime } from '../support/runtime';

/** The capacity pools, each spread over shard items, as creates, resizes, failures and deletes move units. */
const runtime = useTestRuntime();

const create = (apiKey: string, flavor: string) =>
  runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'shard', flavor } });
const action = (apiKey: string, id: number, body: unknown) => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });

/** Adds `delta` to a counter item's units in use (to lay out counters as they were before sharding). */
async function addUsed(name: string, delta: number): Promise<void> {
  await runtime.deps.dynamo.send(
    new UpdateCommand({
      TableName: runtime.tableNames.counters,
      Key: { name },
      UpdateExpression: 'ADD #used :delta',
      ExpressionAttributeNames: { '#used': 'used' },
      ExpressionAttributeValues: { ':delta': delta },
    }),
  );
}

/** Lays an instance and the counters out as they were before sharding: no shard recorded, its units on the old items. */
async function asBeforeSharding(instanceId: number): Promise<void> {
  const item = (await getInstanceItem(runtime.deps, instanceId))!;
  await addUsed(capacityShardName({ kind: 'ipv4' }, item.ipv4_shard), -1);
  await addUsed(capacityShardName({ kind: 'tier', flavor: item.plan.flavor }, item.tier_shard), -1);
  await addUsed('capacity#ipv4', 1);
  await addUsed(`capacity#tier#${item.plan.flavor}`, 1);
  await runtime.deps.dynamo.send(
    new UpdateCommand({
      TableName: runtime.tableNames.instances,
      Key: { instance_id: instanceId },
      UpdateExpression: 'REMOVE ipv4_shard, tier_shard, pending_tier_shard',
    }),
  );
}

/** Sets the limit attribute of a counter item, as an operator's `capacity set` did before sharding. */
async function setOldLimit(name: string, limit: number): Promise<void> {
  await runtime.deps.dynamo.send(
    new UpdateCommand({
      TableName: runtime.tableNames.counters,
      Key: { name },
      UpdateExpression: 'SET #limit = :limit',
      ExpressionAttributeNames: { '#limit': 'limit' },
      ExpressionAttributeValues: { ':limit': limit },
    }),
  );
}

const counterItem = async (name: string) =>
  (await runtime.deps.dynamo.send(new GetCommand({ TableName: runtime.tableNames.counters, Key: { name }, ConsistentRead: true }))).Item;

describe('sharded capacity pools', () => {
  // First in the file: the IPv4 pool is empty, so its limit alone decides how many creates fit.
  it('with an IPv4 pool of 3 over 8 shards, takes exactly 3 creates and refuses the 4th with 503', async () => {
    const { apiKey } = await runtime.newAccount();
    await setCapacityLimit(runtime.deps, { kind: 'ipv4' }, 3);
    try {
      const responses = [];
      for (let i = 0; i < 4; i++) responses.push(await create(apiKey, 's-1vcpu-2gb'));
      const shards = await capacityShardItems(runtime.deps, 'capacity#ipv4');

      expect(responses.map((response) => [response.status, response.body.error])).toEqual([
        [202, undefined],
        [202, undefined],
        [202, undefined],
        [503, 'IPv4 capacity exhausted'],
      ]);
      expect(shards.map((shard) => shard.limit)).toEqual([1, 1, 1, 0, 0, 0, 0, 0]);
      // Only the three shards with a share took a unit.
      expect(shards.map((shard) => shard.used ?? 0)).toEqual([1, 1, 1, 0, 0, 0, 0, 0]);
      expect((await runtime.call('GET', '/api/v1/instances', { apiKey })).body).toHaveLength(3);
    } finally {
      await setCapacityLimit(runtime.deps, { kind: 'ipv4' }, 1000);
    }
  });

  it('with a tier of 3, takes exactly 3 creates and refuses the 4th with the tier text', async () => {
    const { apiKey } = await runtime.newAccount();
    await setCapacityLimit(runtime.deps, { kind: 'tier', flavor: 's-8vcpu-16gb' }, 3);

    const responses = [];
    for (let i = 0; i < 4; i++) responses.push(await create(apiKey, 's-8vcpu-16gb'));

    expect(responses.map((response) => [response.status, response.body.error])).toEqual([
      [202, undefined],
      [202, undefined],
      [202, undefined],
      [503, 'Tier capacity exhausted'],
    ]);
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-8vcpu-16gb')).toBe(3);
  });

  it('never lets creates racing for the last units of a tier take more than its limit', async () => {
    const pool: CapacityPool = { kind: 'tier', flavor: 's-4vcpu-8gb' };
    await setCapacityLimit(runtime.deps, pool, 10);
    // Seven units are taken; eight callers race for the last three, each from its own account.
    const first = await runtime.newAccount();
    for (let i = 0; i < 7; i++) {
      const owner = i < 5 ? first : await runtime.newAccount();
      expect((await create(owner.apiKey, 's-4vcpu-8gb')).status).toBe(202);
    }
    const racers = await Promise.all(Array.from({ length: 8 }, () => runtime.newAccount()));

    const responses = await Promise.all(racers.map(({ apiKey }) => create(apiKey, 's-4vcpu-8gb')));

    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([202, 202, 202, 503, 503, 503, 503, 503]);
    expect(responses.filter((r) => r.status === 503).map((r) => r.body.error)).toEqual(Array(5).fill('Tier capacity exhausted'));
    const shards = await capacityShardItems(runtime.deps, 'capacity#tier#s-4vcpu-8gb');
    expect(shards.map((shard) => shard.limit)).toEqual([2, 2, 1, 1, 1, 1, 1, 1]);
    // Every shard is full, none past its share.
    expect(shards.map((shard) => shard.used ?? 0)).toEqual([2, 2, 1, 1, 1, 1, 1, 1]);
  });

  it('lets 24 concurrent reservations take exactly the 5 units of a pool, in the store', async () => {
    const pool: CapacityPool = { kind: 'tier', flavor: 's-16vcpu-32gb' };
    await setCapacityLimit(runtime.deps, pool, 5);
    const { accountId } = await runtime.newAccount();
    const template = instanceSchema.parse({
      ...storedActiveInstance,
      status: 'pending',
      account_id: accountId,
      plan: { ...storedActiveInstance.plan, flavor: 's-16vcpu-32gb' },
      billing_segments: [],
      version: 1,
    });
    const instances: Instance[] = Array.from({ length: 24 }, (_, i) => ({ ...template, instance_id: 900_000 + i }));

    const outcomes = await Promise.allSettled(
      instances.map((instance) => insertInstanceReservingCapacity(runtime.deps, instance, newJob('provision', instance))),
    );

    const fulfilled = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const refusals = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    expect(fulfilled).toHaveLength(5);
    expect(refusals).toHaveLength(19);
    expect(refusals.every((reason) => reason instanceof CapacityExhaustedError && reason.pool === 'tier')).toBe(true);
    expect((await capacityShardItems(runtime.deps, 'capacity#tier#s-16vcpu-32gb')).map((shard) => shard.used ?? 0)).toEqual([
      1, 1, 1, 1, 1, 0, 0, 0,
    ]);
    // Each recorded instance names the shards its units came from.
    const recorded = (await Promise.all(instances.map((instance) => getInstanceItem(runtime.deps, instance.instance_id)))).filter(
      (item) => item,
    );
    expect(recorded).toHaveLength(5);
    expect(recorded.map((item) => item!.tier_shard).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(recorded.every((item) => Number.isInteger(item!.ipv4_shard) && item!.ipv4_shard! < CAPACITY_SHARDS)).toBe(true);
  });

  it('keeps every shard equal to what the instances hold from it through creates, resizes, failures and deletes', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '200' });
    const kept = await runtime.activeInstance(apiKey, 's-1vcpu-2gb');
    const resized = await runtime.activeInstance(apiKey, 's-1vcpu-2gb');
    const deleted = await runtime.activeInstance(apiKey, 's-2vcpu-2gb');

    const resize = await action(apiKey, resized.instance_id, { type: 'resize', flavor: 's-2vcpu-4gb' });
    const duringResize = await getInstanceItem(runtime.deps, resized.instance_id);
    expect((await runtime.waitForJob(apiKey, resize.body.job_id)).status).toBe('succeeded');
    // A refused resize gives its reserved unit back.
    await runtime.simulator.control.faults({ fail_next: 1, status: 422, match: 'POST /v2/droplets/' });
    const refusedResize = await action(apiKey, kept.instance_id, { type: 'resize', flavor: 's-2vcpu-4gb' });
    await runtime.simulator.control.faults({ fail_next: 0 });
    await runtime.simulator.control.faults({ fail_creates: true });
    const failing = await create(apiKey, 's-2vcpu-2gb');
    expect((await runtime.waitForStatus(apiKey, failing.body.instance_id, ['failed', 'active'])).status).toBe('failed');
    await runtime.simulator.control.faults({ fail_creates: false });
    expect((await runtime.call('DELETE', `/api/v1/instances/${deleted.instance_id}`, { apiKey })).status).toBe(200);
    await runtime.stepFunctions.idle();

    expect(refusedResize.status).toBe(502);
    expect(duringResize).toMatchObject({ status: 'resizing', pending_plan: { flavor: 's-2vcpu-4gb' } });
    expect(duringResize!.pending_tier_shard).toBeGreaterThanOrEqual(0);
    const after = await getInstanceItem(runtime.deps, resized.instance_id);
    // The pending unit became the plan's: the same shard, now recorded as the plan tier's.
    expect(after).toMatchObject({ plan: { flavor: 's-2vcpu-4gb' }, pending_plan: null, pending_tier_shard: null });
    expect(after!.tier_shard).toBe(duringResize!.pending_tier_shard);
    expect(await getInstanceItem(runtime.deps, failing.body.instance_id)).toMatchObject({
      status: 'failed',
      capacity_held: false,
      ipv4_shard: null,
      tier_shard: null,
    });
    const counters = await capacityCounters(runtime.deps);
    expect(counters).toEqual(await capacityHeldByInstances(runtime.deps));
    expect(Object.keys(counters).every((name) => /#[0-7]$/.test(name))).toBe(true);
    expect((await audit(runtime.deps)).counters).toEqual([]);
  });

  it('gives the units of an instance recorded before sharding back to the old single items', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const created = await runtime.activeInstance(apiKey, 's-2vcpu-2gb');
    // Lay the instance and the counters out as they were before sharding: no shard recorded, the units on the old items.
    await asBeforeSharding(created.instance_id);
    expect(await getInstanceItem(runtime.deps, created.instance_id)).toMatchObject({
      account_id: accountId,
      ipv4_shard: null,
      tier_shard: null,
    });
    expect((await audit(runtime.deps)).counters).toEqual([]);

    // A resize gives the old tier unit back to the old item and takes the new one from a shard.
    const resize = await action(apiKey, created.instance_id, { type: 'resize', flavor: 's-2vcpu-4gb' });
    expect((await runtime.waitForJob(apiKey, resize.body.job_id)).status).toBe('succeeded');
    const resized = (await getInstanceItem(runtime.deps, created.instance_id))!;
    const oldItems = async () => ({
      ipv4: (await capacityCounters(runtime.deps))['capacity#ipv4'] ?? 0,
      tier: (await capacityCounters(runtime.deps))['capacity#tier#s-2vcpu-2gb'] ?? 0,
    });
    const afterResize = await oldItems();
    expect(resized).toMatchObject({ ipv4_shard: null, plan: { flavor: 's-2vcpu-4gb' } });
    expect(resized.tier_shard).toBeGreaterThanOrEqual(0);
    expect(await capacityCounters(runtime.deps)).toEqual(await capacityHeldByInstances(runtime.deps));

    // The delete gives the address back to the old item.
    await runtime.call('DELETE', `/api/v1/instances/${created.instance_id}`, { apiKey });
    await runtime.stepFunctions.idle();

    expect(afterResize).toEqual({ ipv4: 1, tier: 0 });
    expect(await oldItems()).toEqual({ ipv4: 0, tier: 0 });
    expect(await capacityCounters(runtime.deps)).toEqual(await capacityHeldByInstances(runtime.deps));
  });

  it('audits each shard on its own: a unit that drifted on one shard is named, the pool total aside', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey, 's-2vcpu-2gb');
    const item = (await getInstanceItem(runtime.deps, instance.instance_id))!;
    const shard = item.tier_shard!;
    const other = (shard + 1) % CAPACITY_SHARDS;
    const held = await capacityHeldByInstances(runtime.deps);
    const name = (n: number) => `capacity#tier#s-2vcpu-2gb#${n}`;
    // A unit moved from the instance's shard to another: the pool's sum is right, both shards are wrong.
    await addUsed(name(shard), -1);
    await addUsed(name(other), 1);
    try {
      const report = await audit(runtime.deps);

      expect(report.counters).toEqual(
        expect.arrayContaining([
          { counter: name(shard), used: (held[name(shard)] ?? 0) - 1, held: held[name(shard)] ?? 0 },
          { counter: name(other), used: (held[name(other)] ?? 0) + 1, held: held[name(other)] ?? 0 },
        ]),
      );
      expect(report.counters).toHaveLength(2);
    } finally {
      await addUsed(name(shard), 1);
      await addUsed(name(other), -1);
    }
  });

  it('moves the limits and units of the counters of before sharding onto the shards, once', async () => {
    const { apiKey } = await runtime.newAccount();
    const created = await runtime.activeInstance(apiKey, 's-1vcpu-2gb');
    await asBeforeSharding(created.instance_id);
    const before = (await getInstanceItem(runtime.deps, created.instance_id))!;
    // The tier's limit set on its old item, before sharding; the IPv4 pool's shards were sized since.
    await setOldLimit('capacity#tier#s-1vcpu-2gb', 40);
    await setOldLimit('capacity#ipv4', 700);

    const first = await moveCapacityToShards(runtime.deps);
    const again = await moveCapacityToShards(runtime.deps);

    expect(first).toEqual({ limits_moved: 1, limits_dropped: 1, instances_moved: 1, units_moved: 2, units_left: 0 });
    expect(again).toEqual({ limits_moved: 0, limits_dropped: 0, instances_moved: 0, units_moved: 0, units_left: 0 });
    expect((await capacityShardItems(runtime.deps, 'capacity#tier#s-1vcpu-2gb')).map((shard) => shard.limit)).toEqual([
      5, 5, 5, 5, 5, 5, 5, 5,
    ]);
    expect((await capacityShardItems(runtime.deps, 'capacity#ipv4')).map((shard) => shard.limit)).toEqual([
      125, 125, 125, 125, 125, 125, 125, 125,
    ]);
    expect(await counterItem('capacity#tier#s-1vcpu-2gb')).toEqual({ name: 'capacity#tier#s-1vcpu-2gb', used: 0 });
    expect(await counterItem('capacity#ipv4')).toEqual({ name: 'capacity#ipv4', used: 0 });
    const after = (await getInstanceItem(runtime.deps, created.instance_id))!;
    expect(after.version).toBe(before.version + 1);
    expect([after.ipv4_shard, after.tier_shard].every((shard) => Number.isInteger(shard))).toBe(true);
    expect(await capacityCounters(runtime.deps)).toEqual(await capacityHeldByInstances(runtime.deps));
    expect((await audit(runtime.deps)).counters).toEqual([]);
  });
});
