import { charge, deposit, periodCharge, runMeter } from '../../shared/domain/billing';
import { getAccount } from '../../shared/store/accounts';
import { getInstanceItem } from '../../shared/store/instances';
import { listLedgerEntries } from '../../shared/store/ledger';
import { setBillingState } from '../support/accounts';
import { useTestRuntime, type TestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const HOUR = 3_600_000;
const meterEntries = async (accountId: string) => (await listLedgerEntries(accountId)).filter((e) => e.kind === 'meter');
const action = (apiKey: string, id: number, body: unknown) => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });

describe('meter', () => {
  it('charges each period once, however often it runs', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const instance = (await getInstanceItem((await runtime.activeInstance(apiKey)).instance_id))!;
    const now = Date.parse(instance.activated_at!) + HOUR;

    await runMeter(now);
    await Promise.all([runMeter(now), runMeter(now)]);

    const entries = await meterEntries(accountId);
    const account = await getAccount(accountId);
    const after = await getInstanceItem(instance.instance_id);
    const expected = periodCharge(instance, Date.parse(after!.metered_until!) - Date.parse(instance.activated_at!));
    expect(entries).toHaveLength(1);
    expect(entries[0]?.amount).toBe(-expected);
    expect(account?.balance).toBe(50_000_000 - expected);
    expect(after!.metered_until! <= new Date(now).toISOString()).toBe(true);
  });

  it('bills a stopped instance at a quarter of its rate', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    await runtime.waitForJob(apiKey, (await action(apiKey, detail.instance_id, { type: 'power_off' })).body.job_id);
    const instance = (await getInstanceItem(detail.instance_id))!;

    await runMeter(Date.parse(instance.metered_until!) + 2 * HOUR);

    const [entry] = await meterEntries(accountId);
    const billedMs = Date.parse(entry!.period_end!) - Date.parse(entry!.period_start!);
    expect(instance.paused_by).toBe('user');
    expect(entry!.amount).toBe(-Math.round((17_860 * billedMs) / (4 * HOUR)));
  });

  it('bills a deleted instance up to its deletion and never after', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${detail.instance_id}`, { apiKey });
    await runtime.waitForJob(apiKey, deleted.body.job_id);
    const instance = (await getInstanceItem(detail.instance_id))!;

    await runMeter(Date.now() + HOUR);
    await runMeter(Date.now() + 2 * HOUR);

    const entries = await meterEntries(accountId);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ period_start: instance.activated_at, period_end: instance.deleted_at });
    expect((await getInstanceItem(detail.instance_id))?.metered_until).toBe(instance.deleted_at);
  });
});

describe('billing pause', () => {
  it('pauses at zero, powers running instances off, refuses power_on until a deposit lifts it', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '5' });
    const detail = await runtime.activeInstance(apiKey);

    const paused = await charge(accountId, 5_000_000, 'usage');
    const stopped = await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);
    await runtime.stepFunctions.idle();
    const refused = await action(apiKey, detail.instance_id, { type: 'power_on' });
    const offAllowed = await action(apiKey, detail.instance_id, { type: 'power_off' });
    const lifted = await deposit(accountId, 2_000_000);
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

    await charge(accountId, 4_000_001, 'usage');
    await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);
    await runtime.stepFunctions.idle();

    expect(await getInstanceItem(detail.instance_id)).toMatchObject({ status: 'stopped', paused_by: 'billing' });
    expect((await getAccount(accountId))?.balance).toBe(-1);
  });

  it('is applied by the meter when usage uses the balance up', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '3.01' });
    const detail = await runtime.activeInstance(apiKey, 's-16vcpu-32gb');
    await setBillingState(accountId, { balance: 1_000 });

    await runMeter(Date.now() + HOUR);
    await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);

    const account = await getAccount(accountId);
    expect(account?.billing_paused).toBe(true);
    expect(account!.balance).toBeLessThanOrEqual(0);
  });
});

describe('ledger', () => {
  it('never loses an update under concurrent charges and deposits', async () => {
    const { accountId } = await runtime.newAccount({ depositUsd: '50' });

    await Promise.all([
      ...Array.from({ length: 40 }, () => charge(accountId, 10_000, 'concurrent')),
      ...Array.from({ length: 10 }, () => deposit(accountId, 30_000)),
    ]);

    const account = await getAccount(accountId);
    expect(account?.balance).toBe(50_000_000 - 40 * 10_000 + 10 * 30_000);
    expect(account?.total_deposited).toBe(50_000_000 + 10 * 30_000);
    expect(await listLedgerEntries(accountId)).toHaveLength(1 + 40 + 10);
  });
});
