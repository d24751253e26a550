import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { MiddlewareStack } from '@smithy/types';
import { issueApiKey } from '../../shared/domain/accounts';
import { revokeKey } from '../../shared/domain/key-management';
import { eventually, startReceiver } from '../support/receiver';
import { useTestRuntime, type TestAccount } from '../support/runtime';

const runtime = useTestRuntime();

type AnyStack = MiddlewareStack<object, object>;

/**
 * Revokes `keyId` at the moment the handler sends its first `commandName` call (on `table`, if named), before that
 * call goes out: the key was good when the request was authenticated and is revoked before its own work lands.
 */
type CommandInput = {
  TableName?: string;
  TransactItems?: Record<string, { TableName?: string; Key?: Record<string, unknown> } | undefined>[];
};

/** The tables a command reads or writes: its own, or those of its transaction's items. */
const tablesOf = (input: CommandInput | undefined): string[] => [
  ...(input?.TableName ? [input.TableName] : []),
  ...(input?.TransactItems ?? []).flatMap((item) => Object.values(item).flatMap((entry) => (entry?.TableName ? [entry.TableName] : []))),
];

/** A command on the table. */
const onTable = (table: string) => (input: CommandInput | undefined) => tablesOf(input).includes(table);

/** A transaction guarded by the key: only the request made with it writes one (no workflow's or timer's write does). */
const guardedBy = (keyHash: string) => (input: CommandInput | undefined) =>
  (input?.TransactItems ?? []).some((item) => item.ConditionCheck?.Key?.key_hash === keyHash);

/**
 * Revokes the key just before the first `commandName` that `matches` is sent, in this process (the local runtime's
 * workflows and timers share the client: the match keeps their own calls from setting it off early).
 */
function revokeJustBefore(
  commandName: string,
  account: TestAccount,
  keyId: number,
  matches: (input: CommandInput | undefined) => boolean,
): void {
  const stack = runtime.deps.dynamo.middlewareStack as unknown as AnyStack;
  let armed = true;
  stack.add(
    (next, context) => async (args) => {
      const input = (args as { input?: CommandInput }).input;
      if (armed && (context as { commandName?: string }).commandName === commandName && matches(input)) {
        armed = false;
        await revokeKey(runtime.deps, account.accountId, keyId);
      }
      return next(args);
    },
    { step: 'initialize', name: 'revokeMidRequest' },
  );
}
afterEach(() => void (runtime.deps.dynamo.middlewareStack as unknown as AnyStack).remove('revokeMidRequest'));

/** The account with a second key, which makes the request and is revoked while it runs. */
async function accountWithDoomedKey(): Promise<{ account: TestAccount; doomed: string; doomedId: number; doomedHash: string }> {
  const account = await runtime.newAccount();
  const { fullKey, record } = await issueApiKey(runtime.deps, account.accountId, 'doomed');
  return { account, doomed: fullKey, doomedId: record.id, doomedHash: record.key_hash };
}

const REVOKED = { error: 'Invalid or revoked API key', request_id: expect.any(String) };

describe('revocation in flight', () => {
  it.each([
    ['an action', 'reboot'],
    ['a delete', 'delete'],
  ])('refuses %s whose key is revoked before its write commits (401), changing nothing, upstream included', async (_, what) => {
    const { account, doomed, doomedId, doomedHash } = await accountWithDoomedKey();
    const instance = await runtime.activeInstance(account.apiKey);
    const upstreamBefore = runtime.simulator.state().calls;
    revokeJustBefore('TransactWriteItemsCommand', account, doomedId, guardedBy(doomedHash));

    const response =
      what === 'delete'
        ? await runtime.call('DELETE', `/api/v1/instances/${instance.instance_id}`, { apiKey: doomed })
        : await runtime.call('POST', `/api/v1/instances/${instance.instance_id}/actions`, { apiKey: doomed, body: { type: what } });
    const after = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey: account.apiKey });

    expect([response.status, response.body]).toEqual([401, REVOKED]);
    expect([after.status, after.body.status]).toEqual([200, 'active']);
    expect(runtime.simulator.state().calls['POST /v2/droplets/{id}/actions'] ?? 0).toBe(
      upstreamBefore['POST /v2/droplets/{id}/actions'] ?? 0,
    );
  });

  it('refuses a create whose key is revoked before its write commits (401), creating nothing and using no deploy', async () => {
    const { account, doomed, doomedId, doomedHash } = await accountWithDoomedKey();
    revokeJustBefore('TransactWriteItemsCommand', account, doomedId, guardedBy(doomedHash));

    const response = await runtime.call('POST', '/api/v1/instances', {
      apiKey: doomed,
      body: { project_name: 'p', flavor: 's-1vcpu-2gb' },
    });
    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey: account.apiKey });
    const next = await runtime.call('POST', '/api/v1/instances', {
      apiKey: account.apiKey,
      body: { project_name: 'q', flavor: 's-1vcpu-2gb' },
    });

    expect([response.status, response.body]).toEqual([401, REVOKED]);
    expect(listed.body).toEqual([]);
    expect(next.headers.get('ratelimit')).toMatch(/"deploy";r=4;/);
  });

  it('does not keep a 401 for the Idempotency-Key: the same key sent with another key of the account deploys', async () => {
    const { account, doomed, doomedId, doomedHash } = await accountWithDoomedKey();
    revokeJustBefore('TransactWriteItemsCommand', account, doomedId, guardedBy(doomedHash));
    const body = { project_name: 'keyed', flavor: 's-1vcpu-2gb' };
    const headers = { 'idempotency-key': 'revoked-mid-create' };

    const refused = await runtime.call('POST', '/api/v1/instances', { apiKey: doomed, body, headers });
    const retried = await runtime.call('POST', '/api/v1/instances', { apiKey: account.apiKey, body, headers });

    expect([refused.status, refused.body]).toEqual([401, REVOKED]);
    expect(retried.status).toBe(202);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it('refuses a read whose key is revoked after authentication (401), with no instance in the answer', async () => {
    const { account, doomed, doomedId } = await accountWithDoomedKey();
    const instance = await runtime.activeInstance(account.apiKey);
    // Authentication's last round reads the account: the key goes just before it, so only the re-check can see it.
    revokeJustBefore('GetItemCommand', account, doomedId, onTable(runtime.tableNames.accounts));

    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey: doomed });

    expect([listed.status, listed.body]).toEqual([401, REVOKED]);
    expect(JSON.stringify(listed.body)).not.toContain(String(instance.root_password));
  });

  it('refuses an action whose key is revoked while the server is read upstream (401): nothing is recorded or sent', async () => {
    const { account, doomed, doomedId } = await accountWithDoomedKey();
    const instance = await runtime.activeInstance(account.apiKey);
    const reads = () => runtime.simulator.state().calls['GET /v2/droplets/{id}'] ?? 0;
    const actions = () => runtime.simulator.state().calls['POST /v2/droplets/{id}/actions'] ?? 0;
    const [readsBefore, actionsBefore] = [reads(), actions()];
    await runtime.simulator.control.faults({ latency_ms: 2_000, latency_match: 'GET /v2/droplets/' });

    const answered = runtime.call('POST', `/api/v1/instances/${instance.instance_id}/actions`, {
      apiKey: doomed,
      body: { type: 'power_off' },
    });
    await runtime.waitFor('the server read to reach the upstream', async () => (reads() > readsBefore ? true : undefined));
    await revokeKey(runtime.deps, account.accountId, doomedId);
    const response = await answered;
    await runtime.simulator.control.faults({ latency_ms: 0 });
    const after = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey: account.apiKey });
    const jobs = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}/jobs`, { apiKey: account.apiKey });

    expect([response.status, response.body]).toEqual([401, REVOKED]);
    expect(actions()).toBe(actionsBefore);
    expect(runtime.simulator.state().droplets.find((droplet) => droplet.id === Number(instance.vps_id))?.status).toBe('active');
    expect([after.body.status, jobs.body.map((job: { type: string }) => job.type)]).toEqual(['active', ['provision']]);
  });

  it('checks again before each upstream attempt: revoked during a slow, refused first attempt, nothing more is sent', async () => {
    const { account, doomed, doomedId } = await accountWithDoomedKey();
    const instance = await runtime.activeInstance(account.apiKey);
    const actions = () => runtime.simulator.state().calls['POST /v2/droplets/{id}/actions'] ?? 0;
    const before = actions();
    await runtime.simulator.control.faults({
      latency_ms: 1_200,
      latency_match: 'POST /v2/droplets/',
      fail_next: 1,
      status: 429,
      match: 'POST /v2/droplets/',
    });

    const [response] = await Promise.all([
      runtime.call('POST', `/api/v1/instances/${instance.instance_id}/actions`, { apiKey: doomed, body: { type: 'reboot' } }),
      new Promise((resolve) => setTimeout(resolve, 300)).then(() => revokeKey(runtime.deps, account.accountId, doomedId)),
    ]);
    await runtime.simulator.control.faults({ latency_ms: 0 });
    const sent = actions() - before;
    const after = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey: account.apiKey });
    const retry = await runtime.call('POST', `/api/v1/instances/${instance.instance_id}/actions`, {
      apiKey: account.apiKey,
      body: { type: 'reboot' },
    });

    expect([response.status, response.body]).toEqual([401, REVOKED]);
    // One refused attempt, or none when a busy machine let the revocation land before the action was recorded.
    expect(sent).toBeLessThanOrEqual(1);
    expect([after.body.status, retry.status]).toEqual(['active', 200]);
  });
});

describe('revocation in flight on the webhook routes', () => {
  const hook = (url = 'http://127.0.0.1:9/hooks') => ({ url, events: ['instance.created'] });
  const webhookCount = async (accountId: string) =>
    (await runtime.deps.dynamo.send(new GetCommand({ TableName: runtime.tableNames.counters, Key: { name: `webhooks#${accountId}` } })))
      .Item?.count ?? 0;

  it('refuses a create whose key is revoked before its write commits (401): no webhook, no place taken', async () => {
    const { account, doomed, doomedId, doomedHash } = await accountWithDoomedKey();
    revokeJustBefore('TransactWriteItemsCommand', account, doomedId, guardedBy(doomedHash));

    const response = await runtime.call('POST', '/api/v1/webhooks', { apiKey: doomed, body: hook() });
    const listed = await runtime.call('GET', '/api/v1/webhooks', { apiKey: account.apiKey });

    expect([response.status, response.body]).toEqual([401, REVOKED]);
    expect(listed.body).toEqual([]);
    expect(await webhookCount(account.accountId)).toBe(0);
  });

  it('refuses a delete whose key is revoked before its write commits (401): the webhook stays', async () => {
    const { account, doomed, doomedId, doomedHash } = await accountWithDoomedKey();
    const webhook = (await runtime.call('POST', '/api/v1/webhooks', { apiKey: account.apiKey, body: hook() })).body;
    revokeJustBefore('TransactWriteItemsCommand', account, doomedId, guardedBy(doomedHash));

    const response = await runtime.call('DELETE', `/api/v1/webhooks/${webhook.id}`, { apiKey: doomed });
    const listed = await runtime.call('GET', '/api/v1/webhooks', { apiKey: account.apiKey });

    expect([response.status, response.body]).toEqual([401, REVOKED]);
    expect(listed.body.map((item: { id: string }) => item.id)).toEqual([webhook.id]);
    expect(await webhookCount(account.accountId)).toBe(1);
  });

  it('refuses a test event whose key is revoked while the webhook is read (401): nothing is sent', async () => {
    const { account, doomed, doomedId } = await accountWithDoomedKey();
    const receiver = await startReceiver();
    try {
      const webhook = (await runtime.call('POST', '/api/v1/webhooks', { apiKey: account.apiKey, body: hook(receiver.url) })).body;
      revokeJustBefore('GetItemCommand', account, doomedId, onTable(runtime.tableNames.webhooks));

      const response = await runtime.call('POST', `/api/v1/webhooks/${webhook.id}/test`, { apiKey: doomed });
      // A later test event with a good key: once it has arrived, a queued refused one would have arrived before it.
      const sentinel = await runtime.call('POST', `/api/v1/webhooks/${webhook.id}/test`, { apiKey: account.apiKey });
      await eventually(() => receiver.received.some((delivery) => delivery.event.id === sentinel.body.event_id), 'the later test event');

      expect([response.status, response.body]).toEqual([401, REVOKED]);
      expect(receiver.received.map((delivery) => delivery.event.id)).toEqual([sentinel.body.event_id]);
    } finally {
      await receiver.close();
    }
  });
});
