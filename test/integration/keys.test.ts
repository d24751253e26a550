import { openSession } from '../../shared/domain/accounts';
import { charge } from '../../shared/domain/billing';
import { updateAccountFlags } from '../../shared/store/accounts';
import { useTestRuntime, type TestAccount, type TestRuntime } from '../support/runtime';

const TRUSTED_PAGE = 'https://app.vps.example.net';
const runtime = useTestRuntime({ env: { TRUSTED_ORIGINS: TRUSTED_PAGE } });

interface Browser extends TestAccount {
  readonly cookie: string;
  readonly csrf: string;
}

async function signedIn(options?: Parameters<TestRuntime['newAccount']>[0]): Promise<Browser> {
  const account = await runtime.newAccount(options);
  const { session, csrfToken } = await openSession(runtime.deps, account.accountId);
  return { ...account, cookie: `session=${session}`, csrf: csrfToken };
}

/** Another session of the account, as another browser would have. */
async function sessionOf(accountId: string): Promise<Pick<Browser, 'cookie' | 'csrf'>> {
  const { session, csrfToken } = await openSession(runtime.deps, accountId);
  return { cookie: `session=${session}`, csrf: csrfToken };
}

/** A request as the service's own web page would send it. */
function fromPage(browser: Browser, method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}) {
  const host = new URL(runtime.baseUrl).host;
  return runtime.call(method, path, {
    body,
    headers: { cookie: browser.cookie, 'x-csrftoken': browser.csrf, origin: `http://${host}`, ...extraHeaders },
  });
}

describe('GET /api/v1/keys', () => {
  it('lists the caller’s keys, revoked ones included, without any secret', async () => {
    const browser = await signedIn();
    const created = await fromPage(browser, 'POST', '/api/v1/keys', { name: 'ci' });
    await fromPage(browser, 'DELETE', `/api/v1/keys/${browser.keyId}`);

    const listed = await runtime.call('GET', '/api/v1/keys', { headers: { cookie: browser.cookie } });

    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([
      {
        id: browser.keyId,
        name: 'Test',
        key_prefix: browser.apiKey.slice(0, 12),
        is_active: false,
        created_at: expect.any(String),
        last_used_at: null,
      },
      {
        id: created.body.id,
        name: 'ci',
        key_prefix: created.body.key_prefix,
        is_active: true,
        created_at: expect.any(String),
        last_used_at: null,
      },
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.full_key);
  });

  it('shows real use in last_used_at', async () => {
    const browser = await signedIn();
    await runtime.call('GET', '/api/v1/instances', { apiKey: browser.apiKey });

    const listed = await runtime.call('GET', '/api/v1/keys', { headers: { cookie: browser.cookie } });

    expect(Date.parse(listed.body[0].last_used_at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it.each([
    { why: 'there is no cookie', headers: {} as Record<string, string>, text: 'Missing session cookie' },
    { why: 'the session is unknown', headers: { cookie: 'session=nope' }, text: 'Invalid or expired session' },
  ])('answers 401 when $why', async ({ headers, text }) => {
    const response = await runtime.call('GET', '/api/v1/keys', { headers });

    expect([response.status, response.body.error]).toEqual([401, text]);
  });

  it('answers 401 for an expired session', async () => {
    const account = await runtime.newAccount();
    const { session } = await openSession(runtime.deps, account.accountId, -1);

    const response = await runtime.call('GET', '/api/v1/keys', { headers: { cookie: `session=${session}` } });

    expect([response.status, response.body.error]).toEqual([401, 'Invalid or expired session']);
  });

  it('never accepts a Bearer key', async () => {
    const { apiKey } = await runtime.newAccount();

    const response = await runtime.call('GET', '/api/v1/keys', { apiKey });

    expect(response.status).toBe(401);
    expect(response.body.error).toMatch(/API keys are not accepted here/);
  });
});

describe('POST /api/v1/keys', () => {
  it('answers 201 with the record and the full key once; the key works at once', async () => {
    const browser = await signedIn();

    const created = await fromPage(browser, 'POST', '/api/v1/keys');
    const used = await runtime.call('GET', '/api/v1/instances', { apiKey: created.body.full_key });

    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(Number),
      name: 'Default',
      key_prefix: created.body.full_key.slice(0, 12),
      is_active: true,
      created_at: expect.any(String),
      last_used_at: null,
      full_key: expect.stringMatching(/^svcmcp_[0-9A-Za-z]{38}$/),
    });
    expect(used.status).toBe(200);
  });

  it.each<{ why: string; headers: Record<string, string> }>([
    { why: 'the CSRF token is missing', headers: { 'x-csrftoken': '' } },
    { why: 'the CSRF token is wrong', headers: { 'x-csrftoken': 'not-the-token' } },
    { why: 'the Origin is another site', headers: { origin: 'https://evil.example' } },
    { why: 'the browser says it is cross-site', headers: { 'sec-fetch-site': 'cross-site' } },
  ])('answers 403 "CSRF validation failed" when $why', async ({ headers }) => {
    const browser = await signedIn();

    const response = await fromPage(browser, 'POST', '/api/v1/keys', { name: 'x' }, headers);

    expect([response.status, response.body.error]).toEqual([403, 'CSRF validation failed']);
    expect((await runtime.call('GET', '/api/v1/keys', { headers: { cookie: browser.cookie } })).body).toHaveLength(1);
  });

  it('accepts a configured page origin on another host', async () => {
    const browser = await signedIn();

    const response = await fromPage(
      browser,
      'POST',
      '/api/v1/keys',
      { name: 'app' },
      { origin: TRUSTED_PAGE, 'sec-fetch-site': 'same-site' },
    );

    expect(response.status).toBe(201);
  });

  it('refuses another session’s CSRF token, and creates no key', async () => {
    const browser = await signedIn();
    const other = await signedIn();

    const response = await fromPage({ ...browser, csrf: other.csrf }, 'POST', '/api/v1/keys');

    expect([response.status, response.body.error]).toEqual([403, 'CSRF validation failed']);
    expect((await runtime.call('GET', '/api/v1/keys', { headers: { cookie: browser.cookie } })).body).toHaveLength(1);
    expect((await runtime.call('GET', '/api/v1/keys', { headers: { cookie: other.cookie } })).body).toHaveLength(1);
  });

  it.each<{ why: string; origin: () => string }>([
    { why: 'the API’s own origin with a suffix', origin: () => `${runtime.baseUrl}.evil.example` },
    {
      why: 'the API host under another domain',
      origin: () => `http://${new URL(runtime.baseUrl).hostname}.evil.example:${new URL(runtime.baseUrl).port}`,
    },
    { why: 'a trusted page’s origin with a suffix', origin: () => `${TRUSTED_PAGE}.evil.example` },
  ])('answers 403 "CSRF validation failed" for a lookalike Origin: $why', async ({ origin }) => {
    const browser = await signedIn();

    const response = await fromPage(browser, 'POST', '/api/v1/keys', { name: 'x' }, { origin: origin(), 'sec-fetch-site': 'same-site' });

    expect([response.status, response.body.error]).toEqual([403, 'CSRF validation failed']);
    expect((await runtime.call('GET', '/api/v1/keys', { headers: { cookie: browser.cookie } })).body).toHaveLength(1);
  });

  it('answers 402 "Deposit required" until $1 has been deposited in total, and stays met after spending', async () => {
    const poor = await signedIn({ depositUsd: '0.99' });
    const spent = await signedIn({ depositUsd: '1' });
    await charge(runtime.deps, spent.accountId, 1_000_000, 'test');

    const refused = await fromPage(poor, 'POST', '/api/v1/keys');
    const allowed = await fromPage(spent, 'POST', '/api/v1/keys');

    expect([refused.status, refused.body.error]).toEqual([402, 'Deposit required']);
    expect(allowed.status).toBe(201);
  });

  // Every standing's answer, and their order, is the unit tier's (test/unit/account-standing.test.ts).
  it.each([
    { standing: 'suspended', flags: { suspended: true }, status: 403, text: 'Account suspended' },
    { standing: 'deleted', flags: { deleted_at: '2026-01-01T00:00:00.000Z' }, status: 401, text: 'Account not found' },
  ])('answers $status "$text" for a $standing account', async ({ flags, status, text }) => {
    const browser = await signedIn();
    await updateAccountFlags(runtime.deps, browser.accountId, flags);

    const response = await fromPage(browser, 'POST', '/api/v1/keys');

    expect([response.status, response.body.error]).toEqual([status, text]);
  });

  it.each([
    { body: { name: 'x'.repeat(101) }, text: 'name must be at most 100 characters' },
    { body: { name: '' }, text: 'name must not be empty' },
    { body: { label: 'x' }, text: 'Unknown field: label' },
  ])('answers 400 "$text"', async ({ body, text }) => {
    const browser = await signedIn();

    const response = await fromPage(browser, 'POST', '/api/v1/keys', body);

    expect([response.status, response.body.error]).toEqual([400, text]);
  });
});

describe('the cap on active keys', () => {
  it('creates exactly 50 of 60 keys created at once, refuses the rest with 409, and gives one place back per revoked key', async () => {
    const browser = await signedIn();
    await fromPage(browser, 'DELETE', `/api/v1/keys/${browser.keyId}`);
    // Other sessions of the same account share the burst, each within its own rate limit.
    const tabs = [browser, ...(await Promise.all([1, 2].map(async () => ({ ...browser, ...(await sessionOf(browser.accountId)) }))))];

    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => fromPage(tabs[i % tabs.length]!, 'POST', '/api/v1/keys', { name: `k${i}` })),
    );
    const listed = await runtime.call('GET', '/api/v1/keys', { headers: { cookie: tabs[1]!.cookie } });
    const created = responses.filter((r) => r.status === 201);
    const refused = responses.filter((r) => r.status !== 201);
    const victim = created[0]!.body.id;
    const revokes = [
      await fromPage(tabs[2]!, 'DELETE', `/api/v1/keys/${victim}`),
      await fromPage(tabs[2]!, 'DELETE', `/api/v1/keys/${victim}`),
    ];
    const afterRevoke = [await fromPage(tabs[2]!, 'POST', '/api/v1/keys'), await fromPage(tabs[2]!, 'POST', '/api/v1/keys')];

    expect(created).toHaveLength(50);
    expect(refused.map((r) => [r.status, r.body.error])).toEqual(
      Array.from({ length: 10 }, () => [409, 'Key limit reached (at most 50 active keys per account)']),
    );
    expect(listed.body.filter((key: { is_active: boolean }) => key.is_active)).toHaveLength(50);
    expect(revokes.map((r) => r.status)).toEqual([200, 200]);
    expect(afterRevoke.map((r) => r.status)).toEqual([201, 409]);
  });
});

describe('DELETE /api/v1/keys/{key_id}', () => {
  it('revokes at once: the very next request with the key is refused', async () => {
    const browser = await signedIn();
    expect((await runtime.call('GET', '/api/v1/instances', { apiKey: browser.apiKey })).status).toBe(200);

    const revoked = await fromPage(browser, 'DELETE', `/api/v1/keys/${browser.keyId}`);
    const next = await runtime.call('GET', '/api/v1/instances', { apiKey: browser.apiKey });

    expect(revoked.body).toEqual({ ok: true, id: browser.keyId });
    expect([next.status, next.body.error]).toEqual([401, 'Invalid or revoked API key']);
  });

  it.each(['another account’s key', 'a key that does not exist', 'a malformed id'])('answers 404 "Key not found" for %s', async (which) => {
    const browser = await signedIn();
    const other = await runtime.newAccount();
    const id = which === 'another account’s key' ? String(other.keyId) : which === 'a malformed id' ? 'abc' : '987654321';

    const response = await fromPage(browser, 'DELETE', `/api/v1/keys/${id}`);

    expect([response.status, response.body.error]).toEqual([404, 'Key not found']);
    expect((await runtime.call('GET', '/api/v1/instances', { apiKey: other.apiKey })).status).toBe(200);
  });

  it('needs the CSRF token too', async () => {
    const browser = await signedIn();

    const response = await runtime.call('DELETE', `/api/v1/keys/${browser.keyId}`, { headers: { cookie: browser.cookie } });

    expect([response.status, response.body.error]).toEqual([403, 'CSRF validation failed']);
  });
});
