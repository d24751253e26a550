import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { applyBalanceRules, charge, deposit, moveLegacyMetered, reviewDueAccounts } from '../../shared/domain/billing';
import { getAccount, updateAccountFlags } from '../../shared/store/accounts';
import { hashApiKey } from '../../shared/model/api-keys';
import { guarded } from '../../shared/request-guard';
import { getInstanceItem, updateInstanceAtVersion } from '../../shared/store/instances';
import { listLedgerEntries } from '../../shared/store/ledger';
import { billingOverview } from '../../shared/domain/payments';
import { setBillingState } from '../support/accounts';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const HOUR = 3_600_000;
/** s-1vcpu-2gb costs 17,860 micro-dollars an hour, a quarter of that while stopped. */
const cost = (fromIso: string, toIso: string, quarters: 1 | 4, hourly = 17_860) =>
  Math.round((hourly * quarters * (Date.parse(toIso) - Date.parse(fromIso))) / (4 * HOUR));
const usageEntries = async (accountId: string) => (await listLedgerEntries(runtime.deps, accountId)).filter((e) => e.kind === 'meter');
const ledgerSum = async (accountId: string) => (await listLedgerEntries(runtime.deps, accountId)).reduce((sum, e) => sum + e.amount, 0);
const action = (apiKey: string, id: number, body: unknown) => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });
const act = async (apiKey: string, id: number, type: string) => {
  const accepted = await action(apiKey, id, { type });
  expect(accepted.body).toMatchObject({ ok: true });
  return runtime.waitForJob(apiKey, accepted.body.job_id);
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('billing by checkpoints', () => {
  it('settles a change of rate in its own write: the closed piece is booked and the account carries the next', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const activatedAt = (await getInstanceItem(runtime.deps, detail.instance_id))!.activated_at!;

    await act(apiKey, detail.instance_id, 'power_off');

    const [entry, ...more] = await usageEntries(accountId);
    const account = (await getAccount(runtime.deps, accountId))!;
    const stoppedAt = account.burning[String(detail.instance_id)]!.start;
    expect(more).toEqual([]);
    expect(entry).toMatchObject({ entry_id: `meter#${detail.instance_id}#${activatedAt}`, instance_id: detail.instance_id });
    expect(entry!.pieces).toEqual([
      expect.objectContaining({ from: activatedAt, to: stoppedAt, quarters: 4, amount: cost(activatedAt, stoppedAt, 4) }),
    ]);
    expect(account.balance).toBe(50_000_000 - cost(activatedAt, stoppedAt, 4));
    expect(account.burning).toEqual({
      [String(detail.instance_id)]: { start: stoppedAt, hourly_micros: 17_860, quarters: 1, billed_until: stoppedAt },
    });
    expect(account.review_at).toBeDefined();
  });

  it('answers a balance that moves between two reads a few seconds apart while a server runs', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.activeInstance(apiKey, 's-16vcpu-32gb');

    const first = await runtime.call('GET', '/api/v1/billing', { apiKey });
    await sleep(2_000);
    const second = await runtime.call('GET', '/api/v1/billing', { apiKey });

    // $0.28571 an hour is 79 micro-dollars a second.
    expect(first.body.balance_micros - second.body.balance_micros).toBeGreaterThanOrEqual(2 * 79 - 1);
    expect(second.body.burn_rate_micros_per_hour).toBe(285_710);
    expect(second.body.balance_micros).toBeLessThan(50_000_000);
  });

  it('bills each segment at its own rate, without gap, up to the deletion and never after', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const activatedAt = (await getInstanceItem(runtime.deps, detail.instance_id))!.activated_at!;
    await act(apiKey, detail.instance_id, 'power_off');
    await act(apiKey, detail.instance_id, 'power_on');
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${detail.instance_id}`, { apiKey });
    await runtime.waitForJob(apiKey, deleted.body.job_id);
    const deletedAt = (await getInstanceItem(runtime.deps, detail.instance_id))!.deleted_at!;

    await applyBalanceRules({ ...runtime.deps, clock: { now: () => new Date(Date.now() + 2 * HOUR) } }, accountId);

    const pieces = (await usageEntries(accountId)).flatMap((entry) => entry.pieces!).sort((a, b) => a.from.localeCompare(b.from));
    expect(pieces.map((p) => p.quarters)).toEqual([4, 1, 4]);
    expect(pieces[0]!.from).toBe(activatedAt);
    expect([pieces[0]!.to, pieces[1]!.to, pieces[2]!.to]).toEqual([pieces[1]!.from, pieces[2]!.from, deletedAt]);
    expect(pieces.map((p) => p.amount)).toEqual(pieces.map((p) => cost(p.from, p.to, p.quarters as 1 | 4)));
    const account = (await getAccount(runtime.deps, accountId))!;
    expect(account.burning).toEqual({});
    expect(account.review_at).toBeUndefined();
    expect(account.balance).toBe(await ledgerSum(accountId));
  });

  it('serialises concurrent changes of one account on its checkpoint: every piece booked once, none lost', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const instances = await Promise.all([1, 2, 3, 4].map(() => runtime.activeInstance(apiKey)));
    const items = await Promise.all(instances.map((instance) => getInstanceItem(runtime.deps, instance.instance_id)));

    // Four changes of rate of one account at once, each settling on the same checkpoint.
    const landed = await Promise.all(
      items.map((item) => updateInstanceAtVersion(runtime.deps, item!, { changes: { status: 'stopped', paused_by: 'user' } })),
    );

    const account = (await getAccount(runtime.deps, accountId))!;
    const entries = await usageEntries(accountId);
    expect(landed).toEqual([true, true, true, true]);
    expect(entries.map((entry) => entry.instance_id).sort()).toEqual(instances.map((i) => i.instance_id).sort());
    expect(Object.values(account.burning).map((segment) => segment.quarters)).toEqual([1, 1, 1, 1]);
    expect(account.balance).toBe(await ledgerSum(accountId));
    expect(account.billing_version).toBeGreaterThanOrEqual(8);
  });

  it.each([
    { case: 'an account still in standing', suspend: false, landed: true },
    { case: 'an account suspended since its request was authenticated', suspend: true, landed: false },
  ])('settles a Bearer request’s change of rate with its standing check folded in: $case', async ({ suspend, landed }) => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const item = (await getInstanceItem(runtime.deps, detail.instance_id))!;
    const request = guarded(runtime.deps, { keyHash: hashApiKey(apiKey), accountId });
    if (suspend) await updateAccountFlags(runtime.deps, accountId, { suspended: true });

    const change = updateInstanceAtVersion(request, item, { changes: { status: 'stopped', paused_by: 'user' } });

    if (landed) expect(await change).toBe(true);
    else await expect(change).rejects.toThrow('Invalid or revoked API key');
    expect((await getInstanceItem(runtime.deps, detail.instance_id))!.status).toBe(landed ? 'stopped' : 'active');
    expect(await usageEntries(accountId)).toHaveLength(landed ? 1 : 0);
  });

  it('books a daily statement at midnight UTC, naming what each instance cost, once', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const [a, b] = await Promise.all([runtime.activeInstance(apiKey), runtime.activeInstance(apiKey, 's-2vcpu-4gb')]);
    const midnight = new Date(Date.now() - (Date.now() % (24 * HOUR))).toISOString();
    const yesterday = new Date(Date.parse(midnight) - 3 * HOUR).toISOString();
    const { burning } = (await getAccount(runtime.deps, accountId))!;
    // As if both had run since 21:00 yesterday.
    await setBillingState(runtime.deps, accountId, {
      burning: Object.fromEntries(Object.entries(burning).map(([id, s]) => [id, { ...s, start: yesterday, billed_until: yesterday }])),
    });

    await Promise.all([applyBalanceRules(runtime.deps, accountId), applyBalanceRules(runtime.deps, accountId)]);
    await applyBalanceRules(runtime.deps, accountId);

    const statements = (await usageEntries(accountId)).filter((entry) => entry.entry_id.startsWith('statement#'));
    expect(statements.map((entry) => entry.entry_id)).toEqual([`statement#${midnight}`]);
    expect(statements[0]!.pieces!.map((p) => [p.instance_id, p.from, p.to, p.amount]).sort()).toEqual(
      [
        [a!.instance_id, yesterday, midnight, 3 * 17_860],
        [b!.instance_id, yesterday, midnight, 3 * 35_710],
      ].sort(),
    );
    const account = (await getAccount(runtime.deps, accountId))!;
    expect(Object.values(account.burning).map((segment) => segment.billed_until)).toEqual([midnight, midnight]);
    expect(account.balance).toBe(await ledgerSum(accountId));
  });
});

describe('billing pause', () => {
  it('pauses a running account within 60 s of its projected zero, with no meter, from the review sweep', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey, 's-16vcpu-32gb');
    // 79 micro-dollars a second: about 5 seconds left.
    const account = (await getAccount(runtime.deps, accountId))!;
    const nowMs = Date.now();
    const spent = Math.round((285_710 * (nowMs - Date.parse(Object.values(account.burning)[0]!.billed_until))) / HOUR);
    await setBillingState(runtime.deps, accountId, { balance: spent + 5 * 79 });
    await applyBalanceRules(runtime.deps, accountId);
    const projected = Date.parse((await getAccount(runtime.deps, accountId))!.review_at!);

    await reviewDueAccounts(runtime.deps);
    await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);

    const { Item: paused } = await runtime.deps.dynamo.send(
      new GetCommand({ TableName: runtime.tableNames.accounts, Key: { account_id: accountId }, ConsistentRead: true }),
    );
    const pausedAt = Date.parse(String(paused!.billing_paused_at));
    expect(projected - nowMs).toBeGreaterThan(2_000);
    expect(projected - nowMs).toBeLessThan(8_000);
    expect(paused!.billing_paused).toBe(true);
    expect(pausedAt - projected).toBeGreaterThanOrEqual(0);
    expect(pausedAt - projected).toBeLessThan(60_000);
    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({ status: 'stopped', paused_by: 'billing' });
  });

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

    expect(paused).toMatchObject({ billing_paused: true });
    expect(stopped.status).toBe('stopped');
    expect([refused.status, refused.body.error]).toEqual([403, 'Instance is billing-paused']);
    expect(offAllowed.body).toEqual({ ok: true, action: 'power_off', job_id: null });
    expect(lifted.billing_paused).toBe(false);
    // The deposit, less what the server cost while it ran (seconds): the piece booked when it stopped.
    expect(lifted.balance).toBeGreaterThan(1_990_000);
    expect(lifted.balance).toBeLessThan(2_000_000);
    expect(stillStopped.body.status).toBe('stopped');
    expect(on.status).toBe(200);
    expect((await runtime.call('GET', `/api/v1/instances/${detail.instance_id}`, { apiKey })).body.status).toBe('active');
  });

  it('marks the instances it powers off as paused by billing, and the balance is its ledger', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '4' });
    const detail = await runtime.activeInstance(apiKey);

    await charge(runtime.deps, accountId, 4_000_001, 'usage');
    await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);
    await runtime.stepFunctions.idle();

    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({ status: 'stopped', paused_by: 'billing' });
    const account = (await getAccount(runtime.deps, accountId))!;
    expect(account.balance).toBeLessThan(-1);
    expect(account.balance).toBe(await ledgerSum(accountId));
  });
});

describe('billingOverview', () => {
  it('pauses an account whose balance it reads at zero or below, without waiting for the review sweep', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '10' });
    const { instance_id } = await runtime.activeInstance(apiKey);
    // Stopped, so that the pause has no server to power off; $10 lasts about 2,240 hours at a quarter of its price.
    await act(apiKey, instance_id, 'power_off');
    const later = { ...runtime.deps, clock: { now: () => new Date(Date.now() + 10_000 * HOUR) } };

    const view = await billingOverview(later, (await getAccount(runtime.deps, accountId))!);
    const stored = await getAccount(runtime.deps, accountId);

    expect(view.billing_paused).toBe(true);
    expect(stored?.billing_paused).toBe(true);
  });
});

describe('migration from the per-period meter', () => {
  it('moves an instance metered the old way to its account checkpoint once, charging what the old meter had not', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const instance = (await getInstanceItem(runtime.deps, detail.instance_id))!;
    const meteredUntil = new Date(Date.parse(instance.activated_at!) - 2 * HOUR).toISOString();
    // As the old meter left it: charged to `metered_until`, in its index, not on the account.
    await runtime.deps.dynamo.send(
      new UpdateCommand({
        TableName: runtime.tableNames.instances,
        Key: { instance_id: detail.instance_id },
        UpdateExpression: 'SET metered_until = :until, meter_shard = :shard, billing_segments = :segments',
        ExpressionAttributeValues: {
          ':until': meteredUntil,
          ':shard': `meter#${detail.instance_id % 16}`,
          ':segments': [
            { start: meteredUntil, end: instance.activated_at, hourly_micros: 17_860, quarters: 1 },
            { start: instance.activated_at, end: null, hourly_micros: 17_860, quarters: 4 },
          ],
        },
      }),
    );
    await runtime.deps.dynamo.send(
      new UpdateCommand({
        TableName: runtime.tableNames.accounts,
        Key: { account_id: accountId },
        UpdateExpression: 'SET balance = :balance REMOVE burning, review_at, review_shard',
        ExpressionAttributeValues: { ':balance': 50_000_000 },
      }),
    );

    const moved = await Promise.all([moveLegacyMetered(runtime.deps), moveLegacyMetered(runtime.deps)]);
    const again = await moveLegacyMetered(runtime.deps);

    const [entry, ...more] = await usageEntries(accountId);
    const account = (await getAccount(runtime.deps, accountId))!;
    const billedUntil = account.burning[String(detail.instance_id)]!.billed_until;
    expect(moved.reduce((a, b) => a + b, 0)).toBe(1);
    expect(again).toBe(0);
    expect(more).toEqual([]);
    expect(entry!.entry_id).toBe(`meter#${detail.instance_id}#${meteredUntil}`);
    expect(entry!.amount).toBe(-(cost(meteredUntil, instance.activated_at!, 1) + cost(instance.activated_at!, billedUntil, 4)));
    expect(account.balance).toBe(50_000_000 + entry!.amount);
    expect((await getInstanceItem(runtime.deps, detail.instance_id))!.meter_shard).toBeUndefined();
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
