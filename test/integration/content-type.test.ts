import { useTestRuntime, type TestAccount } from '../support/runtime';

const runtime = useTestRuntime();
let account: TestAccount;
beforeEach(async () => {
  account = await runtime.newAccount();
});

const deploy = { project_name: 'web', flavor: 's-1vcpu-2gb' };

/** Sends a raw body with exactly the Content-Type given (none at all when undefined). */
async function post(path: string, body: string, contentType: string | undefined, apiKey?: string) {
  const response = await fetch(`${runtime.baseUrl}${path}`, {
    method: 'POST',
    headers: { ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}), ...(contentType ? { 'content-type': contentType } : {}) },
    // Bytes, not a string: fetch would otherwise add text/plain itself.
    body: Buffer.from(body),
  });
  return { status: response.status, body: (await response.json()) as { error?: string } & Record<string, unknown> };
}

describe('the Content-Type policy of JSON bodies', () => {
  it.each([
    ['application/json', 'application/json'],
    ['application/json with a charset', 'application/json; charset=utf-8'],
    ['a +json type', 'application/vnd.api+json'],
    ['form encoding, as curl -d sends it', 'application/x-www-form-urlencoded'],
    ['no Content-Type at all', undefined],
  ])('reads a Bearer route body sent as %s as JSON', async (_, contentType) => {
    const response = await post('/api/v1/instances', JSON.stringify(deploy), contentType, account.apiKey);

    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ project_name: 'web', status: 'pending', plan: { flavor: 's-1vcpu-2gb' } });
  });

  it.each([
    ['text/plain', 'text/plain'],
    ['multipart/form-data', 'multipart/form-data; boundary=x'],
  ])('answers a Bearer route body sent as %s 415, and creates nothing', async (_, contentType) => {
    const response = await post('/api/v1/instances', JSON.stringify(deploy), contentType, account.apiKey);

    expect(response.status).toBe(415);
    expect(response.body.error).toBe('Content-Type must be application/json');
    expect((await runtime.call('GET', '/api/v1/instances', { apiKey: account.apiKey })).body).toEqual([]);
  });

  it.each([
    ['real form fields', 'project_name=web&flavor=s-1vcpu-2gb', 'application/x-www-form-urlencoded'],
    ['a prototype key', '{"project_name":"web","flavor":"s-1vcpu-2gb","__proto__":{"admin":true}}', 'application/json'],
  ])('answers a Bearer route body of %s 400 Invalid JSON body, and creates nothing', async (_, body, contentType) => {
    const response = await post('/api/v1/instances', body, contentType, account.apiKey);

    expect(response.status).toBe(400);
    expect(response.body.error).toBe('Invalid JSON body');
    expect((await runtime.call('GET', '/api/v1/instances', { apiKey: account.apiKey })).body).toEqual([]);
  });

  it.each([
    ['form encoding', 'application/x-www-form-urlencoded'],
    ['text/plain', 'text/plain'],
    ['no Content-Type at all', undefined],
  ])('answers a cookie-family route body sent as %s 415: a page of another site could send it unasked', async (_, contentType) => {
    const response = await post(
      '/api/v1/auth/sign-up',
      JSON.stringify({ email: 'form@example.com', password: 'a long enough password' }),
      contentType,
    );

    expect(response.status).toBe(415);
    expect(response.body.error).toBe('Content-Type must be application/json');
  });
});
