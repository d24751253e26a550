import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { charge, deposit, runMeter } from '../../shared/domain/billing';
import { getAccount } from '../../shared/store/accounts';
import { getInstanceItem } from '../../shared/store/instances';
import { listLedgerEntries } from '../../shared/store/ledger';
import { setBillingState } from '../support/accounts';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const HOUR = 3_600_000;
/** s-1vcpu-2gb costs 17,860 micro-dollars an hour, a quarter of that while stopped. */
const cost = (fromIso: string, toIso: string, quarters: 1 | 4) =>
  Math.round((17_860 * quarters * (Date.parse(toIso) - Date.parse(fromIso))) / (4 * HOUR));
const meterEntries = async (accountId: string) => (await listLedgerEntries(runtime.deps, accountId)).filter((e) => e.kind === 'meter');
const action = (apiKey: string, id: number, body: unknown) => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });

describe('meter', () => {
  it('charges each period once, however often it runs', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const instance = (await getInstanceItem(runtime.deps, (await runtime.activeInstance(apiKey)).instance_id))!;
    const now = Date.parse(instance.activated_at!) + HOUR;

    // Several runs at once over a span nobody has charged yet, then one more.
    await Promise.all([runMeter(runtime.deps, now), runMeter(runtime.deps, now), runMeter(runtime.deps, now)]);
    await runMeter(runtime.deps, now);

    const entries = await meterEntries(accountId);
    const account = await getAccount(runtime.deps, accountId);
    const after = await getInstanceItem(runtime.deps, instance.instance_id);
    const expected = cost(instance.activated_at!, after!.metered_until!, 4);
    expect(entries).toHaveLength(1);
    expect(entries[0]?.amount).toBe(-expected);
    expect(account?.balance).toBe(50_000_000 - expected);
    expect(after!.metered_until! <= new Date(now).toISOString()).toBe(true);
  });

  it('charges each segment at its own rate when the meter runs after a power off and on', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const off = await runtime.waitForJob(apiKey, (await action(apiKey, detail.instance_id, { type: 'power_off' })).body.job_id);
    const on = await runtime.waitForJob(apiKey, (await action(apiKey, detail.instance_id, { type: 'power_on' })).body.job_id);
    const activatedAt = (await getInstanceItem(runtime.deps, detail.instance_id))!.activated_at!;

    await runMeter(runtime.deps, Date.now() + 2 * HOUR);

    const [entry] = await meterEntries(accountId);
    const pieces = entry!.pieces!;
    expect(pieces.map((p) => p.quarters)).toEqual([4, 1, 4]);
    expect(pieces[0]!.from).toBe(activatedAt);
    expect([pieces[0]!.to, pieces[1]!.to]).toEqual([pieces[1]!.from, pieces[2]!.from]);
    // The stop is billed from the moment the power off was recorded (with its job's end) to the moment the power on was.
    expect(Math.abs(Date.parse(pieces[1]!.from) - Date.parse(off.finished_at))).toBeLessThan(1_000);
    expect(Math.abs(Date.parse(pieces[1]!.to) - Date.parse(on.finished_at))).toBeLessThan(1_000);
    expect(pieces.map((p) => p.amount)).toEqual([
      cost(pieces[0]!.from, pieces[0]!.to, 4),
      cost(pieces[1]!.from, pieces[1]!.to, 1),
      cost(pieces[2]!.from, pieces[2]!.to, 4),
    ]);
    expect(entry!.amount).toBe(-(pieces[0]!.amount + pieces[1]!.amount + pieces[2]!.amount));
    expect(entry!.period_end).toBe(pieces[2]!.to);
  });

  it('charges a backlog at the rates that were in force, not the rate when the meter runs', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    await runtime.waitForJob(apiKey, (await action(apiKey, detail.instance_id, { type: 'power_off' })).body.job_id);
    const stoppedAt = (await getInstanceItem(runtime.deps, detail.instance_id))!.billing_segments.at(-1)!.start;
    const activatedAt = (await getInstanceItem(runtime.deps, detail.instance_id))!.activated_at!;
    const now = Date.now() + 3 * HOUR;
    const boundary = new Date(now - (now % 300_000)).toISOString();

    await runMeter(runtime.deps, now);

    const [entry] = await meterEntries(accountId);
    expect(entry!.amount).toBe(-(cost(activatedAt, stoppedAt, 4) + cost(stoppedAt, boundary, 1)));
    expect((await getAccount(runtime.deps, accountId))?.balance).toBe(50_000_000 + entry!.amount);
  });

  it('reads only instances with time left to bill: one leaves the meter index once charged to its deletion', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const inIndex = async () => {
      const { Items = [] } = await runtime.deps.dynamo.send(
        new QueryCommand({
          TableName: runtime.tableNames.instances,
          IndexName: 'meter_by_shard',
          KeyConditionExpression: 'meter_shard = :shard AND instance_id = :id',
          ExpressionAttributeValues: { ':shard': `meter#${detail.instance_id % 16}`, ':id': detail.instance_id },
        }),
      );
      return Items.length === 1;
    };
    const whileActive = await inIndex();
    await runtime.waitForJob(apiKey, (await runtime.call('DELETE', `/api/v1/instances/${detail.instance_id}`, { apiKey })).body.job_id);
    const deletedUncharged = await inIndex();

    await runMeter(runtime.deps, Date.now() + HOUR);

    expect([whileActive, deletedUncharged, await inIndex()]).toEqual([true, true, false]);
  });

  it('bills a deleted instance up to its deletion and never after', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${detail.instance_id}`, { apiKey });
    await runtime.waitForJob(apiKey, deleted.body.job_id);
    const instance = (await getInstanceItem(runtime.deps, detail.instance_id))!;

    await runMeter(runtime.deps, Date.now() + HOUR);
    await runMeter(runtime.deps, Date.now() + 2 * HOUR);

    const entries = await meterEntries(accountId);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ period_start: instance.activated_at, period_end: instance.deleted_at });
    expect((await getInstanceItem(runtime.deps, detail.instance_id))?.metered_until).toBe(instance.deleted_at);
  });
});

describe('billing pause', () => {
  it('pauses at zero, powers running instances off, refuses power_on until a deposit lifts it', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '5' });
    const detail = await runtime.activeInstance(apiKey);

    const paused = await charge(runtime.deps, accountId, 5_000_000, 'usage');
    const stopped = await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);
    await runtime.stepFunctions.idle();
    const refused = await action(apiKey, detail.instance_id, { type: 'power_on' });
    const offAllowed = await action(apiKey, detail.instance_id, { type: 'power_off' });
    const lifted = await deposit(runtime.deps, accountId, 2_000_000);
    const stillStopped = await runtime.call('GET', `/api/v1/instances/${detail.instance_id}`, { apiKey });
    const on = await action(apiKey, detail.instance_id, { type: 'power_on' });
    await runtime.waitForJob(apiKey, on.body.job_id);

    expect(paused).toMatchObject({ balance: 0, billing_paused: true });
    expect(stopped.status).toBe('stopped');
    expect([refused.status, refused.body.error]).toEqual([403, 'Instance is billing-paused']);
    expect(offAllowed.body).toEqual({ ok: true, action: 'power_off', job_id: null });
    expect(lifted).toMatchObject({ balance: 2_000_000, billing_paused: false });
    expect(stillStopped.body.status).toBe('stopped');
    expect(on.status).toBe(200);
    expect((await runtime.call('GET', `/api/v1/instances/${detail.instance_id}`, { apiKey })).body.status).toBe('active');
  });

  it('marks the instances it powers off as paused by billing', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '4' });
    const detail = await runtime.activeInstance(apiKey);

    await charge(runtime.deps, accountId, 4_000_001, 'usage');
    await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);
    await runtime.stepFunctions.idle();

    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({ status: 'stopped', paused_by: 'billing' });
    expect((await getAccount(runtime.deps, accountId))?.balance).toBe(-1);
  });

  it('is applied by the meter when usage uses the balance up', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '3.01' });
    const detail = await runtime.activeInstance(apiKey, 's-16vcpu-32gb');
    await setBillingState(runtime.deps, accountId, { balance: 1_000 });

    await runMeter(runtime.deps, Date.now() + HOUR);
    await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);

    const account = await getAccount(runtime.deps, accountId);
    expect(account?.billing_paused).toBe(true);
    expect(account!.balance).toBeLessThanOrEqual(0);
  });
});

describe('ledger', () => {
  it('never loses an update under concurrent charges and deposits', async () => {
    const { accountId } = await runtime.newAccount({ depositUsd: '50' });

    await Promise.all([
      ...Array.from({ length: 40 }, () => charge(runtime.deps, accountId, 10_000, 'concurrent')),
      ...Array.from({ length: 10 }, () => deposit(runtime.deps, accountId, 30_000)),
    ]);

    const account = await getAccount(runtime.deps, accountId);
    expect(account?.balance).toBe(50_000_000 - 40 * 10_000 + 10 * 30_000);
    expect(account?.total_deposited).toBe(50_000_000 + 10 * 30_000);
    expect(await listLedgerEntries(runtime.deps, accountId)).toHaveLength(1 + 40 + 10);
  });
});
