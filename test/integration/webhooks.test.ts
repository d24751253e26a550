import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();
const RECEIVER = 'http://127.0.0.1:9/hooks';

async function createWebhook(apiKey: string, body: unknown = { url: RECEIVER, events: ['instance.status_changed'] }) {
  return runtime.call('POST', '/api/v1/webhooks', { apiKey, body });
}

describe('POST /api/v1/webhooks', () => {
  it('registers a receiver and shows its signing secret this once, keeping it sealed at rest', async () => {
    const { apiKey } = await runtime.newAccount();

    const created = await createWebhook(apiKey, { url: RECEIVER, events: ['instance.status_changed', 'job.failed', 'job.failed'] });
    const listed = await runtime.call('GET', '/api/v1/webhooks', { apiKey });
    const { Item } = await runtime.deps.dynamo.send(
      new GetCommand({ TableName: runtime.tableNames.webhooks, Key: { webhook_id: created.body.id } }),
    );

    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^wh_[0-9A-Za-z]{20}$/),
      url: RECEIVER,
      events: ['instance.status_changed', 'job.failed'],
      enabled: true,
      disabled_at: null,
      created_at: expect.any(String),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    expect(created.headers.get('ratelimit-policy')).toBe('"general";q=60;w=60');
    const { secret: _secret, ...view } = created.body;
    expect(listed.body).toEqual([view]);
    expect(JSON.stringify(Item)).not.toContain(created.body.secret.slice('whsec_'.length));
    expect(Item?.secret_sealed).toEqual(expect.any(String));
  });

  it.each([
    {
      case: 'a URL over 2,048 characters',
      body: { url: `https://example.com/${'a'.repeat(2_030)}`, events: ['instance.created'] },
      error: 'url must be at most 2048 characters',
    },
    { case: 'no events', body: { url: RECEIVER, events: [] }, error: 'events must not be empty' },
    { case: 'a missing url', body: { events: ['instance.created'] }, error: 'url is required' },
    { case: 'an unknown field', body: { url: RECEIVER, events: ['instance.created'], secret: 'x' }, error: 'Unknown field: secret' },
    {
      case: 'an unknown event type',
      body: { url: RECEIVER, events: ['instance.exploded'] },
      error:
        'events.0 must be one of instance.created, instance.status_changed, instance.updated, instance.deleted, job.succeeded, job.failed, webhook.disabled, account.balance_low, account.billing_paused, account.billing_resumed, account.auto_recharge_disabled',
    },
    { case: 'a relative URL', body: { url: '/hooks', events: ['instance.created'] }, error: 'url must be an absolute https URL' },
    {
      case: 'an ftp URL',
      body: { url: 'ftp://127.0.0.1/hooks', events: ['instance.created'] },
      error: 'url must be an absolute https URL',
    },
    {
      case: 'credentials in the URL',
      body: { url: 'http://user:pass@127.0.0.1/hooks', events: ['instance.created'] },
      error: 'url must not contain credentials',
    },
    {
      case: 'the metadata address',
      body: { url: 'http://169.254.169.254/latest/meta-data', events: ['instance.created'] },
      error: 'url must not point to a loopback, private, link-local or reserved address',
    },
    {
      case: 'a private address',
      body: { url: 'http://10.0.0.8/hooks', events: ['instance.created'] },
      error: 'url must not point to a loopback, private, link-local or reserved address',
    },
    {
      case: 'the metadata address inside an IPv4-compatible IPv6 address',
      body: { url: 'http://[::a9fe:a9fe]/', events: ['instance.created'] },
      error: 'url must not point to a loopback, private, link-local or reserved address',
    },
    {
      case: 'a private address inside an IPv4-compatible IPv6 address',
      body: { url: 'http://[::a00:1]/', events: ['instance.created'] },
      error: 'url must not point to a loopback, private, link-local or reserved address',
    },
  ])('refuses $case with 400', async ({ body, error }) => {
    const { apiKey } = await runtime.newAccount();

    const refused = await createWebhook(apiKey, body);

    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe(error);
    expect((await runtime.call('GET', '/api/v1/webhooks', { apiKey })).body).toEqual([]);
  });

  it('allows 10 webhooks per account, even when they are created all at once, and an 11th after a delete', async () => {
    const { apiKey } = await runtime.newAccount();

    const attempts = await Promise.all(Array.from({ length: 12 }, () => createWebhook(apiKey)));
    const refused = attempts.filter((attempt) => attempt.status !== 201);
    const deleted = await runtime.call('DELETE', `/api/v1/webhooks/${attempts.find((attempt) => attempt.status === 201)!.body.id}`, {
      apiKey,
    });
    const afterDelete = await createWebhook(apiKey);

    expect(attempts.filter((attempt) => attempt.status === 201)).toHaveLength(10);
    expect(refused.map((attempt) => [attempt.status, attempt.body.error])).toEqual([
      [409, 'Webhook limit reached (at most 10 per account)'],
      [409, 'Webhook limit reached (at most 10 per account)'],
    ]);
    expect(deleted.status).toBe(200);
    expect(afterDelete.status).toBe(201);
    expect((await runtime.call('GET', '/api/v1/webhooks', { apiKey })).body).toHaveLength(10);
  });

  it('answers 401 without a key', async () => {
    const refused = await runtime.call('POST', '/api/v1/webhooks', { body: { url: RECEIVER, events: ['instance.created'] } });

    expect(refused.status).toBe(401);
  });
});

describe('webhooks of another account', () => {
  it.each([
    { method: 'DELETE', suffix: '' },
    { method: 'POST', suffix: '/test' },
    { method: 'GET', suffix: '/deliveries' },
  ])('answers 404 "Webhook not found" to $method /api/v1/webhooks/{id}$suffix', async ({ method, suffix }) => {
    const owner = await runtime.newAccount();
    const other = await runtime.newAccount();
    const webhook = (await createWebhook(owner.apiKey)).body;

    const foreign = await runtime.call(method, `/api/v1/webhooks/${webhook.id}${suffix}`, { apiKey: other.apiKey });
    const missing = await runtime.call(method, `/api/v1/webhooks/wh_${'0'.repeat(20)}${suffix}`, { apiKey: other.apiKey });
    const malformed = await runtime.call(method, `/api/v1/webhooks/nope${suffix}`, { apiKey: other.apiKey });

    for (const answer of [foreign, missing, malformed]) {
      expect(answer.status).toBe(404);
      expect(answer.body.error).toBe('Webhook not found');
    }
    expect((await runtime.call('GET', '/api/v1/webhooks', { apiKey: other.apiKey })).body).toEqual([]);
    expect((await runtime.call('GET', '/api/v1/webhooks', { apiKey: owner.apiKey })).body.map((w: { id: string }) => w.id)).toEqual([
      webhook.id,
    ]);
  });
});

describe('DELETE /api/v1/webhooks/{id}', () => {
  it('removes the webhook; a second delete is 404', async () => {
    const { apiKey } = await runtime.newAccount();
    const webhook = (await createWebhook(apiKey)).body;

    const deleted = await runtime.call('DELETE', `/api/v1/webhooks/${webhook.id}`, { apiKey });
    const again = await runtime.call('DELETE', `/api/v1/webhooks/${webhook.id}`, { apiKey });

    expect([deleted.status, deleted.body]).toEqual([200, { ok: true, id: webhook.id }]);
    expect([again.status, again.body.error]).toEqual([404, 'Webhook not found']);
    expect((await runtime.call('GET', '/api/v1/webhooks', { apiKey })).body).toEqual([]);
  });
});
