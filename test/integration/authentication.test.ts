import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { generateApiKey } from '../../shared/model/api-keys';
import { getAccountApiKey, revokeApiKey } from '../../shared/store/api-keys';
import { updateAccountFlags } from '../../shared/store/accounts';
import { routes } from '../../shared/routes';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const instanceRoutes = [
  ['GET', '/api/v1/instances'],
  ['POST', '/api/v1/instances'],
  ['GET', '/api/v1/instances/1'],
  ['DELETE', '/api/v1/instances/1'],
  ['POST', '/api/v1/instances/1/actions'],
  ['GET', '/api/v1/jobs/00000000-0000-0000-0000-000000000000'],
] as const;

describe('Bearer authentication', () => {
  describe.each(instanceRoutes)('%s %s', (method, path) => {
    it.each([
      { header: undefined, text: 'Missing or malformed Authorization header' },
      { header: 'Basic dXNlcjpwYXNz', text: 'Missing or malformed Authorization header' },
      { header: 'Bearer', text: 'Missing or malformed Authorization header' },
      { header: 'Bearer two words', text: 'Missing or malformed Authorization header' },
      { header: 'Bearer sk_live_abcdef', text: 'Invalid API key prefix' },
      { header: 'Bearer svcmcp_short', text: 'Invalid or revoked API key' },
      { header: `Bearer ${generateApiKey().fullKey.slice(0, -1)}x`, text: 'Invalid or revoked API key' },
      { header: `Bearer ${generateApiKey().fullKey}`, text: 'Invalid or revoked API key' },
    ])('answers 401 "$text" for Authorization $header', async ({ header, text }) => {
      const response = await runtime.call(method, path, { headers: header ? { authorization: header } : {} });

      expect(response.status).toBe(401);
      expect(response.body.error).toBe(text);
    });
  });

  it('refuses a revoked key on the very next request', async () => {
    const { accountId, apiKey, keyId } = await runtime.newAccount();
    expect((await runtime.call('GET', '/api/v1/instances', { apiKey })).status).toBe(200);
    const key = await getAccountApiKey(runtime.deps, accountId, keyId);
    await revokeApiKey(runtime.deps, key!, new Date().toISOString());

    const response = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(response.status).toBe(401);
    expect(response.body.error).toBe('Invalid or revoked API key');
  });

  it('answers 401 "API key owner not found" when the account record is gone', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    await runtime.deps.dynamo.send(new DeleteCommand({ TableName: runtime.tableNames.accounts, Key: { account_id: accountId } }));

    const response = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(response.status).toBe(401);
    expect(response.body.error).toBe('API key owner not found');
  });

  it.each([
    { standing: 'deleted', flags: { deleted_at: new Date().toISOString() }, status: 401, text: 'API key owner not found' },
    { standing: 'suspended', flags: { suspended: true }, status: 403, text: 'Account suspended' },
    { standing: 'unconfirmed', flags: { confirmed: false }, status: 403, text: 'Account not confirmed' },
    { standing: 'suspended and unconfirmed', flags: { suspended: true, confirmed: false }, status: 403, text: 'Account suspended' },
  ])('answers $status "$text" when the account is $standing', async ({ flags, status, text }) => {
    const { accountId, apiKey } = await runtime.newAccount();
    await updateAccountFlags(runtime.deps, accountId, flags);

    const response = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(response.status).toBe(status);
    expect(response.body.error).toBe(text);
  });

  it('accepts the scheme name in any case', async () => {
    const { apiKey } = await runtime.newAccount();

    const response = await runtime.call('GET', '/api/v1/instances', { headers: { authorization: `bearer ${apiKey}` } });

    expect(response.status).toBe(200);
  });

  it('carries no rate-limit headers on a refused key, and the request id on every answer', async () => {
    const response = await runtime.call('GET', '/api/v1/instances');

    expect(response.headers.get('ratelimit')).toBeNull();
    expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
  });
});

describe('what only a signed-in person may do', () => {
  // Key management, the console's own routes, and auto-recharge (the service charging the saved card later): a key,
  // stolen or handed to a script, does none of it.
  const sessionOnly = routes
    .filter((route) => route.auth === 'session')
    .map((route) => [route.method, route.path.replaceAll(/\{[^}]+\}/g, '1')] as const);

  it('covers auto-recharge and key management', () => {
    expect(sessionOnly).toEqual(
      expect.arrayContaining([
        ['POST', '/api/v1/keys'],
        ['DELETE', '/api/v1/keys/1'],
        ['POST', '/api/v1/billing/auto-recharge'],
      ]),
    );
  });

  it.each(sessionOnly)('refuses a valid API key on %s %s', async (method, path) => {
    const { apiKey } = await runtime.newAccount();

    const response = await runtime.call(method, path, { apiKey, body: method === 'GET' || method === 'DELETE' ? undefined : {} });

    expect([response.status, response.body.error]).toEqual([401, 'API keys are not accepted here: key management needs a session cookie']);
  });
});
