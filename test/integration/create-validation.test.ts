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
  it.each([
    { why: 'project_name is missing', body: { flavor: 's-1vcpu-2gb' }, text: 'project_name is required' },
    { why: 'flavor is missing', body: { project_name: 'web' }, text: 'flavor is required' },
    { why: 'the body is empty', body: {}, text: 'project_name is required' },
    {
      why: 'project_name is over 64 characters',
      body: { ...valid, project_name: 'x'.repeat(65) },
      text: 'project_name must be at most 64 characters',
    },
    { why: 'project_name is blank', body: { ...valid, project_name: '   ' }, text: 'project_name must not be empty' },
    { why: 'project_name is not a string', body: { ...valid, project_name: 42 }, text: 'project_name must be a string' },
    { why: 'the flavor is unknown', body: { ...valid, flavor: 's-99vcpu' }, text: 'Invalid flavor: s-99vcpu' },
    { why: 'the flavor is retired', body: { ...valid, flavor: 's-1vcpu-1gb' }, text: 'Flavor s-1vcpu-1gb is permanently unavailable' },
    { why: 'a field is unknown', body: { ...valid, region: 'nyc3' }, text: 'Unknown field: region' },
    { why: 'the body is an array', body: [valid], text: 'Request body must be a JSON object' },
    { why: 'the ssh key is not a key', body: { ...valid, ssh_public_key: 'hello' }, text: /^Invalid ssh_public_key/ },
    {
      why: 'the ssh key blob names another type',
      body: { ...valid, ssh_public_key: 'ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIIJlZ65+nrz4U6KVEParNBgeWRvLZ4jikgQaV9EDOuGA x' },
      text: /^Invalid ssh_public_key/,
    },
    {
      why: 'the ssh key is a private key',
      body: { ...valid, ssh_public_key: '-----BEGIN OPENSSH PRIVATE KEY-----' },
      text: /^Invalid ssh_public_key/,
    },
    { why: 'the RSA key is too short', body: { ...valid, ssh_public_key: rsaPublicKeyLine(1024) }, text: /^Invalid ssh_public_key/ },
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
      why: 'a body over 16 KiB',
      rawBody: JSON.stringify({ ...valid, ssh_public_key: 'x'.repeat(17 * 1024) }),
      status: 413,
      text: /too large/,
    },
  ])('answers $status for $why', async ({ rawBody, status, text }) => {
    const response = await runtime.call('POST', '/api/v1/instances', { apiKey: account.apiKey, rawBody });

    expect(response.status).toBe(status);
    expect(response.body.error).toMatch(text);
  });
});
