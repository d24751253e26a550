import { createInstanceRoute } from '../../shared/contracts/instances';
import { statusOf } from '../../shared/http/failure-status';
import { judgeCreate } from '../../shared/model/create';
import { parseOrBadRequest } from '../../shared/schemas/validation';
import { rsaPublicKeyLine } from '../fixtures/ssh-keys';

const valid = { project_name: 'web', flavor: 's-1vcpu-2gb' };
const FUNDED = 50_000_000;

/** A deploy's checks as the route runs them: the contract's body schema, then the create's own, in order. */
function check(body: unknown, balance = FUNDED, billedInstances = 0): [number, string] | 'accepted' {
  try {
    judgeCreate({ balance, billedInstances }, parseOrBadRequest(createInstanceRoute.body, body));
    return 'accepted';
  } catch (error) {
    return [statusOf(error), (error as Error).message];
  }
}

describe('the checks of a deploy', () => {
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
  ])('answers 400 when $why', ({ body, text }) => {
    const verdict = check(body);

    expect(verdict).not.toBe('accepted');
    const [status, message] = verdict as [number, string];
    expect(status).toBe(400);
    expect(message).toMatch(text);
  });

  it.each([
    { balance: 'exactly $3.00', micros: 3_000_000, verdict: [402, 'Insufficient balance to deploy: the balance must be above $3.00'] },
    { balance: '$3.00 and one micro-dollar', micros: 3_000_001, verdict: 'accepted' },
    { balance: 'nothing', micros: 0, verdict: [402, 'Insufficient balance to deploy: the balance must be above $3.00'] },
  ])('answers $verdict for a balance of $balance', ({ micros, verdict }) => {
    expect(check(valid, micros)).toEqual(verdict);
  });

  it('accepts a 64-character project name and a 3072-bit RSA key, and names the key after the project', () => {
    const order = judgeCreate(
      { balance: FUNDED, billedInstances: 0 },
      parseOrBadRequest(createInstanceRoute.body, { ...valid, project_name: 'x'.repeat(64), ssh_public_key: rsaPublicKeyLine(3072) }),
    );

    expect(order.plan.flavor).toBe('s-1vcpu-2gb');
    expect(order.keyName).toBe(`${'x'.repeat(64)}-key`);
    expect(order.sshKey).toMatchObject({ name: `${'x'.repeat(64)}-key` });
  });

  it.each([
    { billed: 1_999, verdict: 'accepted' },
    { billed: 2_000, verdict: [403, 'Instance limit reached: an account can have 2,000 billed instances'] },
  ])('answers $verdict for an account with $billed billed instances', ({ billed, verdict }) => {
    expect(check(valid, FUNDED, billed)).toEqual(verdict);
  });

  it('generates the key when none is given', () => {
    expect(judgeCreate({ balance: FUNDED, billedInstances: 0 }, valid).sshKey).toBeNull();
  });

  it.each([
    {
      why: 'the body before the flavor',
      body: { project_name: '   ', flavor: 's-99vcpu' },
      balance: 0,
      text: 'project_name must not be empty',
    },
    {
      why: 'the flavor before the key',
      body: { ...valid, flavor: 's-99vcpu', ssh_public_key: 'hello' },
      balance: 0,
      text: 'Invalid flavor: s-99vcpu',
    },
    { why: 'the key before the balance', body: { ...valid, ssh_public_key: 'hello' }, balance: 0, text: /^Invalid ssh_public_key/ },
  ])('checks $why', ({ body, balance, text }) => {
    const [status, message] = check(body, balance) as [number, string];

    expect(status).toBe(400);
    expect(message).toMatch(text);
  });
});
