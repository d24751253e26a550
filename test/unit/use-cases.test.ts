import type { Deps } from '../../shared/domain/deps';
import { openAccount, usdToMicros } from '../../shared/domain/accounts';
import { charge, deposit } from '../../shared/domain/billing';
import { sendAuthMail, signUp } from '../../shared/domain/console-auth';
import { createInstance, getInstanceDetail } from '../../shared/domain/instances';
import { createKey, listKeys, revokeKey } from '../../shared/domain/key-management';
import { deleteInstance } from '../../shared/domain/lifecycle';
import { statusOf } from '../../shared/http/failure-status';
import { getAccount } from '../../shared/store/accounts';
import { setCapacityLimit } from '../../shared/store/counters';
import { getInstanceItem } from '../../shared/store/instances';
import { getJob } from '../../shared/store/jobs';
import { listLedgerEntries } from '../../shared/store/ledger';
import { temporarySecretsKeyFile } from '../../infra/local/secrets-key';
import { memoryDeps as memoryDepsWith } from '../support/unit-deps';

// Customers' secrets are sealed with a local key, as in the local runtime.
const secretsKey = temporarySecretsKeyFile();
afterAll(() => secretsKey.remove());
const memoryDeps = (runtime: Parameters<typeof memoryDepsWith>[1] = {}, env: Record<string, string> = {}) =>
  memoryDepsWith({ SECRETS_KEY_FILE: secretsKey.path, ...env }, runtime);

/** The status and text a use case refused with. */
async function refusal(work: Promise<unknown>): Promise<[number, string]> {
  const error = await work.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  return [statusOf(error), (error as Error).message];
}

async function fundedAccount(deps: Deps, usd = '50') {
  const account = await openAccount(deps, { email: 'ann@example.com', confirmed: true, suspended: false });
  return usdToMicros(usd) > 0 ? deposit(deps, account.account_id, usdToMicros(usd)) : account;
}

describe('createInstance (in memory)', () => {
  it('records a pending instance with its provision job and starts the provision workflow, once', async () => {
    const { deps, record } = memoryDeps();
    const account = await fundedAccount(deps);

    const detail = await createInstance(deps, account, { project_name: 'web', flavor: 's-1vcpu-2gb' });

    expect(detail).toMatchObject({ status: 'pending', project_name: 'web', domain: `vps-${detail.instance_id}.vps.example.net` });
    expect(detail.root_password).toMatch(/^[A-Za-z0-9]{24}$/);
    expect(detail.ssh_key.private_key).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----/);
    expect(record.started.map(({ workflow, job }) => [workflow, job.type, job.instance_id])).toEqual([
      ['provision', 'provision', detail.instance_id],
    ]);
    const stored = await getInstanceItem(deps, detail.instance_id);
    expect(stored).toMatchObject({ status: 'pending', account_id: account.account_id });
    expect(await getJob(deps, record.started[0]!.job.job_id)).toMatchObject({
      type: 'provision',
      status: 'running',
      instance_id: detail.instance_id,
    });
    // What the customer reads back is what was answered, secrets included.
    expect((await getInstanceDetail(deps, account.account_id, detail.instance_id)).detail).toMatchObject({
      root_password: detail.root_password,
    });
  });

  it('dates the instance and its job by the runtime’s clock and names the job with the runtime’s ids', async () => {
    let next = 0;
    const { deps, record } = memoryDeps({
      clock: { now: () => new Date('2026-11-25T08:00:00.000Z') },
      ids: { uuid: () => `00000000-0000-4000-8000-${String(++next).padStart(12, '0')}` },
    });
    const account = await fundedAccount(deps);

    const detail = await createInstance(deps, account, { project_name: 'web', flavor: 's-1vcpu-2gb' });

    expect(detail.created_at).toBe('2026-11-25T08:00:00.000Z');
    expect(record.started[0]!.job).toMatchObject({
      job_id: expect.stringMatching(/^00000000-0000-4000-8000-\d{12}$/),
      started_at: '2026-11-25T08:00:00.000Z',
    });
  });

  it('answers 503 "Tier capacity exhausted" when the flavor’s tier is full, records nothing and starts nothing', async () => {
    const { deps, record } = memoryDeps();
    const account = await fundedAccount(deps);
    await setCapacityLimit(deps, { kind: 'tier', flavor: 's-16vcpu-32gb' }, 0);

    const refused = await refusal(createInstance(deps, account, { project_name: 'big', flavor: 's-16vcpu-32gb' }));

    expect(refused).toEqual([503, 'Tier capacity exhausted']);
    expect(record.started).toEqual([]);
    expect(await getInstanceItem(deps, 1)).toBeUndefined();
  });

  it('answers 402 at a balance of exactly $3.00, before anything is reserved', async () => {
    const { deps, record } = memoryDeps();
    const account = await fundedAccount(deps, '3');

    const refused = await refusal(createInstance(deps, account, { project_name: 'web', flavor: 's-1vcpu-2gb' }));

    expect(refused).toEqual([402, 'Insufficient balance to deploy: the balance must be above $3.00']);
    expect(record.started).toEqual([]);
  });
});

describe('deleteInstance (in memory)', () => {
  it('marks the instance deleting and starts its delete workflow; another account’s instance is 404', async () => {
    const { deps, record } = memoryDeps();
    const owner = await fundedAccount(deps);
    const stranger = await openAccount(deps, { email: 'bob@example.com', confirmed: true, suspended: false });
    const { instance_id: id } = await createInstance(deps, owner, { project_name: 'web', flavor: 's-1vcpu-2gb' });

    expect(await refusal(deleteInstance(deps, stranger, id))).toEqual([404, 'Instance not found']);
    const deleted = await deleteInstance(deps, owner, id);

    expect(deleted).toMatchObject({ instance_id: id, status: 'deleting' });
    expect(record.started.map(({ workflow }) => workflow)).toEqual(['provision', 'delete']);
    expect(await getInstanceItem(deps, id)).toMatchObject({ status: 'deleting', deleted_at: expect.any(String) });
    expect(await getJob(deps, deleted.job_id!)).toMatchObject({ type: 'delete', status: 'running', instance_id: id });
  });
});

describe('deposit and charge (in memory)', () => {
  it('credits a deposit once per entry id, however often it is repeated', async () => {
    const { deps } = memoryDeps();
    const account = await openAccount(deps, { email: 'ann@example.com', confirmed: true, suspended: false });

    await Promise.all(Array.from({ length: 5 }, () => deposit(deps, account.account_id, 20_000_000, 'deposit#provider-1')));

    expect(await getAccount(deps, account.account_id)).toMatchObject({ balance: 20_000_000, total_deposited: 20_000_000 });
    expect((await listLedgerEntries(deps, account.account_id)).map((entry) => entry.entry_id)).toEqual(['deposit#provider-1']);
  });

  it('billing-pauses the account when a charge takes it to zero, and a deposit lifts the pause', async () => {
    const { deps } = memoryDeps();
    const account = await fundedAccount(deps, '5');

    const charged = await charge(deps, account.account_id, 5_000_000, 'operator charge');
    const funded = await deposit(deps, account.account_id, 1_000_000);

    expect([charged.balance, charged.billing_paused]).toEqual([0, true]);
    expect([funded.balance, funded.billing_paused]).toEqual([1_000_000, false]);
  });
});

describe('createKey and revokeKey (in memory)', () => {
  it('answers 402 "Deposit required" before the first dollar, then issues a key that revoking deactivates', async () => {
    const { deps } = memoryDeps();
    const unfunded = await openAccount(deps, { email: 'ann@example.com', confirmed: true, suspended: false });

    expect(await refusal(createKey(deps, unfunded, { name: 'ci' }))).toEqual([402, 'Deposit required']);
    const funded = await deposit(deps, unfunded.account_id, 1_000_000);
    const created = await createKey(deps, funded, { name: 'ci' });
    await revokeKey(deps, funded.account_id, created.id);

    expect(created.full_key).toMatch(/^svcmcp_/);
    expect((await listKeys(deps, funded.account_id)).map(({ id, is_active }) => [id, is_active])).toEqual([[created.id, false]]);
    expect(await refusal(revokeKey(deps, 'acct_other', created.id))).toEqual([404, 'Key not found']);
  });
});

describe('signUp and its e-mail (in memory)', () => {
  it('queues the sign-up, then its mail creates the unconfirmed account and sends one confirmation link', async () => {
    const { deps, record } = memoryDeps({}, { CONSOLE_URL: 'https://console.example.com/' });

    await signUp(deps, { email: 'ann@example.com', password: 'correct horse battery' }, '198.51.100.7');
    expect(record.authMails.map((mail) => [mail.kind, 'email' in mail ? mail.email : undefined])).toEqual([['sign-up', 'ann@example.com']]);
    await sendAuthMail(deps, record.authMails[0]!);

    expect(record.mails.map(({ to, subject }) => [to, subject])).toEqual([['ann@example.com', 'Confirm your e-mail address']]);
    expect(record.mails[0]!.text).toMatch(/https:\/\/console\.example\.com\/#\/confirm\?token=\S+/);
  });
});
