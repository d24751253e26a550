import { openSession } from '../../shared/domain/accounts';
import { getInstanceItem } from '../../shared/store/instances';
import { ED25519_PUBLIC_KEY } from '../fixtures/ssh-keys';
import { useTestRuntime } from '../support/runtime';
import { everythingStored } from '../support/stored';

const runtime = useTestRuntime();

/** The lines of a PEM block between its armour: what identifies the key, whatever the line breaks. */
const pemBody = (pem: string) => pem.split('\n').filter((line) => line && !line.startsWith('-----'));

describe('secrets at rest', () => {
  it('stores no root password, private key, API key, session or CSRF token in clear in any table', async () => {
    const account = await runtime.newAccount();
    const { session, csrfToken } = await openSession(runtime.deps, account.accountId);
    const page = { cookie: `session=${session}`, 'x-csrftoken': csrfToken, origin: `http://${new URL(runtime.baseUrl).host}` };
    const key = await runtime.call('POST', '/api/v1/keys', { body: { name: 'walk' }, headers: page });
    const apiKey = key.body.full_key as string;
    const generated = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'walk', flavor: 's-1vcpu-2gb' },
      headers: { 'idempotency-key': 'walk-create' },
    });
    const replayed = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'walk', flavor: 's-1vcpu-2gb' },
      headers: { 'idempotency-key': 'walk-create' },
    });
    const ownKey = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'own-key', flavor: 's-1vcpu-2gb', ssh_public_key: ED25519_PUBLIC_KEY },
    });
    const active = await runtime.waitForStatus(apiKey, generated.body.instance_id, ['active']);
    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey });
    const action = await runtime.call('POST', `/api/v1/instances/${generated.body.instance_id}/actions`, {
      apiKey,
      body: { type: 'reboot' },
      headers: { 'idempotency-key': 'walk-reboot' },
    });
    await runtime.waitForJob(apiKey, action.body.job_id);
    await runtime.call('GET', '/api/v1/keys', { headers: { cookie: page.cookie } });
    await runtime.waitForStatus(apiKey, ownKey.body.instance_id, ['active']);
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${ownKey.body.instance_id}`, { apiKey });
    await runtime.waitForJob(apiKey, deleted.body.job_id);
    await runtime.call('DELETE', `/api/v1/keys/${account.keyId}`, { headers: page });

    const stored = await everythingStored(runtime);

    expect([key.status, generated.status, replayed.status, ownKey.status, listed.status, action.status, deleted.status]).toEqual([
      201, 202, 202, 202, 200, 200, 200,
    ]);
    expect(replayed.body).toEqual(generated.body);
    expect(active.root_password).toBe(generated.body.root_password);
    expect((active.ssh_key as { private_key: string }).private_key).toBe(generated.body.ssh_key.private_key);
    expect(listed.body.map((summary: { root_password: string }) => summary.root_password).sort()).toEqual(
      [generated.body.root_password, ownKey.body.root_password].sort(),
    );
    const secrets = [
      apiKey,
      account.apiKey,
      session,
      csrfToken,
      generated.body.root_password,
      ownKey.body.root_password,
      ...pemBody(generated.body.ssh_key.private_key),
    ];
    expect(secrets.length).toBeGreaterThan(8);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThanOrEqual(24);
      expect(stored).not.toContain(secret);
    }
  });

  it('removes the sealed credentials when an instance is deleted or fails', async () => {
    const { apiKey } = await runtime.newAccount();
    const kept = await runtime.activeInstance(apiKey);
    const doomed = await runtime.activeInstance(apiKey);
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${doomed.instance_id}`, { apiKey });
    await runtime.simulator.control.faults({ fail_creates: true });
    const failing = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'doomed', flavor: 's-1vcpu-2gb' } });
    const failed = await runtime.waitForStatus(apiKey, failing.body.instance_id, ['failed']);
    await runtime.simulator.control.faults({ fail_creates: false });
    await runtime.waitForJob(apiKey, deleted.body.job_id);

    const [keptItem, deletedItem, failedItem] = await Promise.all(
      [kept.instance_id, doomed.instance_id, failing.body.instance_id].map((id) => getInstanceItem(runtime.deps, id as number)),
    );

    expect(keptItem?.sealed_secrets).toEqual(expect.any(String));
    expect(deletedItem?.sealed_secrets).toBeNull();
    expect(failedItem?.sealed_secrets).toBeNull();
    expect([failed.root_password, (failed.ssh_key as { private_key: unknown }).private_key]).toEqual([null, null]);
  });
});
