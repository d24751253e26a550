import { ThrottlingException } from '@aws-sdk/client-dynamodb';
import { tableName } from '../../shared/platform';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { METER_LEASE_MS, METER_PERIOD_MS, meterShard } from '../../shared/domain/billing';
import { METER_SHARDS, meterShardOf } from '../../shared/model/billing-segments';
import { getAccount } from '../../shared/store/accounts';
import { getInstanceItem } from '../../shared/store/instances';
import { listLedgerEntries } from '../../shared/store/ledger';
import { releaseMeterLease, takeMeterLease } from '../../shared/store/meter-leases';
import { asStepError } from '../../shared/transient-errors';
import { setBillingState } from '../support/accounts';
import { useTestRuntime } from '../support/runtime';

const HOUR = 3_600_000;
/** s-1vcpu-2gb costs 17,860 micro-dollars an hour. */
const runningCost = (fromMs: number, toMs: number) => Math.round((17_860 * (toMs - fromMs)) / HOUR);

/** Failures to inject into the next invocations of a shard's worker, and every invocation seen, by shard. */
const failuresLeft = new Map<number, number>();
const invocations = new Map<number, number>();

const runtime = useTestRuntime({
  aroundTask: async (workflow, _state, invoke, input) => {
    if (workflow !== 'meter') return invoke();
    const { shard } = input as { shard: number };
    invocations.set(shard, (invocations.get(shard) ?? 0) + 1);
    const left = failuresLeft.get(shard) ?? 0;
    if (left === 0) return invoke();
    failuresLeft.set(shard, left - 1);
    // What a worker ends with when DynamoDB kept throttling it past the SDK's retries.
    throw asStepError(
      new ThrottlingException({ message: 'Rate of requests exceeds the allowed throughput', $metadata: { httpStatusCode: 400 } }),
    );
  },
});

const shardOf = (instanceId: number) => instanceId % METER_SHARDS;
const meterEntries = async (accountId: string, instanceId: number) =>
  (await listLedgerEntries(runtime.deps, accountId)).filter((entry) => entry.kind === 'meter' && entry.instance_id === instanceId);

/**
 * Active instances of one account, each in a shard of its own, owed the last two hours: their billing (segment and
 * `metered_until`) is moved back to `from`, as if nobody had charged them since.
 */
async function owedInstances(apiKey: string, count: number, from: number, avoidShards: ReadonlySet<number> = new Set()): Promise<number[]> {
  const ids: number[] = [];
  const shards = new Set(avoidShards);
  while (ids.length < count) {
    const { instance_id: id } = await runtime.activeInstance(apiKey);
    if (shards.has(shardOf(id))) continue;
    shards.add(shardOf(id));
    ids.push(id);
  }
  for (const id of ids) {
    await runtime.deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(runtime.deps, 'instances'),
        Key: { instance_id: id },
        UpdateExpression: 'SET metered_until = :from, billing_segments[0].#start = :from',
        ExpressionAttributeNames: { '#start': 'start' },
        ExpressionAttributeValues: { ':from': new Date(from).toISOString() },
      }),
    );
  }
  return ids;
}

/** Starts meter executions at once, away from a period boundary (so that all of them charge up to the same one). */
async function meterAtOnce(count: number, before?: (boundary: number) => Promise<void>) {
  while (Date.now() % METER_PERIOD_MS > METER_PERIOD_MS - 10_000) await new Promise((resolve) => setTimeout(resolve, 1_000));
  const boundary = Date.now() - (Date.now() % METER_PERIOD_MS);
  await before?.(boundary);
  const arns = Array.from({ length: count }, () => runtime.stepFunctions.start('meter'));
  const executions = arns.map((arn) => runtime.stepFunctions.executions.get(arn)!);
  await Promise.all(executions.map((execution) => execution.done));
  return { executions, boundary };
}

describe('meter state machine', () => {
  beforeEach(() => {
    failuresLeft.clear();
    invocations.clear();
  });

  it('charges a span nobody has charged exactly once when several executions race over it', async () => {
    const from = Date.now() - (Date.now() % METER_PERIOD_MS) - 2 * HOUR;
    const first = await runtime.newAccount();
    const second = await runtime.newAccount();
    const ids = { [first.accountId]: await owedInstances(first.apiKey, 2, from) };
    ids[second.accountId] = await owedInstances(second.apiKey, 2, from, new Set(ids[first.accountId]!.map(shardOf)));

    const { executions, boundary } = await meterAtOnce(3);

    expect(executions.map((execution) => execution.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    // They raced: each started before any of them had ended.
    expect(Math.max(...executions.map((e) => e.startDate))).toBeLessThan(Math.min(...executions.map((e) => e.stopDate!)));
    const owed = runningCost(from, boundary);
    for (const [accountId, instanceIds] of Object.entries(ids)) {
      for (const id of instanceIds) {
        const entries = await meterEntries(accountId, id);
        expect(entries.map((entry) => [entry.period_start, entry.period_end, entry.amount])).toEqual([
          [new Date(from).toISOString(), new Date(boundary).toISOString(), -owed],
        ]);
        expect((await getInstanceItem(runtime.deps, id))!.metered_until).toBe(new Date(boundary).toISOString());
      }
      expect((await getAccount(runtime.deps, accountId))!.balance).toBe(50_000_000 - 2 * owed);
    }
  });

  it('billing-pauses an account whose charges in two shards charged at once take it to zero together', async () => {
    const from = Date.now() - (Date.now() % METER_PERIOD_MS) - 2 * HOUR;
    const { accountId, apiKey } = await runtime.newAccount();
    const [one, other] = await owedInstances(apiKey, 2, from);
    let owed = 0;

    const { executions } = await meterAtOnce(1, async (boundary) => {
      owed = runningCost(from, boundary);
      // Enough for either charge alone, not for both.
      await setBillingState(runtime.deps, accountId, { balance: owed + 1 });
    });

    expect(executions[0]!.status).toBe('SUCCEEDED');
    expect(await meterEntries(accountId, one!)).toHaveLength(1);
    expect(await meterEntries(accountId, other!)).toHaveLength(1);
    const account = await getAccount(runtime.deps, accountId);
    expect(account!.balance).toBe(1 - owed);
    expect(account!.billing_paused).toBe(true);
    await runtime.waitForStatus(apiKey, one!, ['stopped']);
    await runtime.waitForStatus(apiKey, other!, ['stopped']);
  });

  it("retries a shard whose worker failed, alone, and charges that shard's instances", async () => {
    const from = Date.now() - (Date.now() % METER_PERIOD_MS) - 2 * HOUR;
    const { accountId, apiKey } = await runtime.newAccount();
    const [failing, healthy] = await owedInstances(apiKey, 2, from);
    failuresLeft.set(shardOf(failing!), 1);

    const { executions, boundary } = await meterAtOnce(1);

    expect(executions[0]!.status).toBe('SUCCEEDED');
    expect(invocations.get(shardOf(failing!))).toBe(2);
    expect(invocations.get(shardOf(healthy!))).toBe(1);
    expect([...invocations.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: METER_SHARDS }, (_, shard) => shard));
    for (const id of [failing!, healthy!]) {
      expect((await meterEntries(accountId, id)).map((entry) => entry.amount)).toEqual([-runningCost(from, boundary)]);
    }
  });

  it('charges the other shards when one keeps failing, and ends the execution failed', async () => {
    const from = Date.now() - (Date.now() % METER_PERIOD_MS) - 2 * HOUR;
    const { accountId, apiKey } = await runtime.newAccount();
    const [failing, healthy] = await owedInstances(apiKey, 2, from);
    failuresLeft.set(shardOf(failing!), 1_000);

    const { executions, boundary } = await meterAtOnce(1);

    expect(executions[0]!.status).toBe('FAILED');
    expect(executions[0]!.error).toBe('MeterShardsFailed');
    // The first attempt and the Transient policy's 10 retries.
    expect(invocations.get(shardOf(failing!))).toBe(11);
    expect(await meterEntries(accountId, failing!)).toEqual([]);
    expect((await getInstanceItem(runtime.deps, failing!))!.metered_until).toBe(new Date(from).toISOString());
    expect((await meterEntries(accountId, healthy!)).map((entry) => entry.amount)).toEqual([-runningCost(from, boundary)]);
    expect((await getAccount(runtime.deps, accountId))!.balance).toBe(50_000_000 - runningCost(from, boundary));
  });
});

describe('meter shard lease', () => {
  it('goes to exactly one of several holders asking at once, and to another only once released or expired', async () => {
    const key = meterShardOf(METER_SHARDS - 1);
    const now = Date.now();
    const holders = Array.from({ length: 6 }, (_, i) => `execution-${i}`);
    const taken = await Promise.all(holders.map((holder) => takeMeterLease(runtime.deps, key, holder, now, now + 1_000)));
    expect(taken.filter(Boolean)).toHaveLength(1);
    const holder = holders[taken.indexOf(true)]!;
    const other = holders.find((candidate) => candidate !== holder)!;

    expect(await takeMeterLease(runtime.deps, key, other, now + 999, now + 2_000)).toBe(false);
    // Its holder takes it over (a retry of the same execution), and gives it back.
    expect(await takeMeterLease(runtime.deps, key, holder, now + 999, now + 2_000)).toBe(true);
    await releaseMeterLease(runtime.deps, key, other);
    expect(await takeMeterLease(runtime.deps, key, other, now + 1_500, now + 3_000)).toBe(false);
    await releaseMeterLease(runtime.deps, key, holder);
    expect(await takeMeterLease(runtime.deps, key, other, now + 1_500, now + 3_000)).toBe(true);
    // Expired: anyone takes it.
    expect(await takeMeterLease(runtime.deps, key, holder, now + 3_000, now + 4_000)).toBe(true);
    await releaseMeterLease(runtime.deps, key, holder);
  });

  it('leaves a shard alone while another execution holds it; a retry of the holder charges it', async () => {
    const from = Date.now() - (Date.now() % METER_PERIOD_MS) - 2 * HOUR;
    const { accountId, apiKey } = await runtime.newAccount();
    const [id] = await owedInstances(apiKey, 1, from);
    const shard = shardOf(id!);
    const now = Date.now();
    const boundary = now - (now % METER_PERIOD_MS);
    expect(await takeMeterLease(runtime.deps, meterShardOf(shard), 'execution-a', now, now + METER_LEASE_MS)).toBe(true);

    expect(await meterShard(runtime.deps, shard, now, 'execution-b')).toMatchObject({ shard, skipped: true, periodsCharged: 0 });
    expect(await meterEntries(accountId, id!)).toEqual([]);

    expect(await meterShard(runtime.deps, shard, now, 'execution-a')).toMatchObject({ shard, skipped: false });
    expect((await meterEntries(accountId, id!)).map((entry) => entry.amount)).toEqual([-runningCost(from, boundary)]);
    // Given back at the end: the next execution takes it.
    expect(await takeMeterLease(runtime.deps, meterShardOf(shard), 'execution-c', Date.now(), Date.now() + 1_000)).toBe(true);
    await releaseMeterLease(runtime.deps, meterShardOf(shard), 'execution-c');
  });
});
