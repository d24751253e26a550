import { rsaPublicKeyLine } from '../fixtures/ssh-keys';
import { useTestRuntime, type TestAccount } from '../support/runtime';

const runtime = useTestRuntime();
let account: TestAccount;
// A fresh account per case keeps the deploy limit (5 per hour) out of the way.
beforeEach(async () => {
  account = await runtime.newAccount();
});

const valid = { project_name: 'web', flavor: 's-1vcpu-2gb' };

describe('POST /api/v1/instances validation', () => {
  // The whole table of the create's checks, and their order, is the unit tier's (test/unit/create-checks.test.ts): here
  // one refusal of each stage shows the route answers it with nothing recorded.
  it.each([
    { why: 'project_name is missing', body: { flavor: 's-1vcpu-2gb' }, text: 'project_name is required' },
    { why: 'the flavor is unknown', body: { ...valid, flavor: 's-99vcpu' }, text: 'Invalid flavor: s-99vcpu' },
    { why: 'the ssh key is not a key', body: { ...valid, ssh_public_key: 'hello' }, text: /^Invalid ssh_public_key/ },
  ])('answers 400 when $why', async ({ body, text }) => {
    const response = await runtime.call('POST', '/api/v1/instances', { apiKey: account.apiKey, body });

    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(text);
    expect((await runtime.call('GET', '/api/v1/instances', { apiKey: account.apiKey })).body).toEqual([]);
  });

  it('accepts a 64-character project name and a 3072-bit RSA key', async () => {
    const response = await runtime.call('POST', '/api/v1/instances', {
      apiKey: account.apiKey,
      body: { ...valid, project_name: 'x'.repeat(64), ssh_public_key: rsaPublicKeyLine(3072) },
    });

    expect(response.status).toBe(202);
    expect(response.body.ssh_key.private_key).toBeNull();
  });

  it.each([
    { why: 'malformed JSON', rawBody: '{"project_name": ', status: 400, text: 'Invalid JSON body' },
    {
      why: 'a body over 256 KiB (a create takes user data)',
      rawBody: JSON.stringify({ ...valid, ssh_public_key: 'x'.repeat(257 * 1024) }),
      status: 413,
      text: /^Request body too large \(limit 256 KiB\)$/,
    },
  ])('answers $status for $why', async ({ rawBody, status, text }) => {
    const response = await runtime.call('POST', '/api/v1/instances', { apiKey: account.apiKey, rawBody });

    expect(response.status).toBe(status);
    expect(response.body.error).toMatch(text);
  });
});
