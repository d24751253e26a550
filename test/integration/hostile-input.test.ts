import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { openSession } from '../../shared/domain/accounts';
import { ED25519_PUBLIC_KEY } from '../fixtures/ssh-keys';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const NAME_REFUSAL = 'must not contain control characters, bidirectional overrides or unpaired surrogates';
const hostileNames = [
  ['a terminal escape', 'x\u001b]0;owned\u0007\u001b[2J'],
  ['a line feed', 'x\ny'],
  ['a carriage return', 'x\ry'],
  ['NUL', 'x\u0000y'],
  ['DEL', 'x\u007fy'],
  ['NEL (C1)', 'x\u0085y'],
  ['a C1 CSI', 'x\u009b2Jy'],
  ['a right-to-left override', 'x\u202etxt.exe'],
  ['a left-to-right isolate', 'x\u2066y'],
  ['a right-to-left mark', 'x\u200fy'],
  ['a line separator', 'x\u2028y'],
  ['a lone high surrogate', 'x\ud800y'],
  ['a lone low surrogate', 'x\udc00y'],
] as const;

describe('names', () => {
  it.each(hostileNames)('refuses a project_name with %s (400), creating nothing', async (_, name) => {
    const { apiKey } = await runtime.newAccount();

    const response = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: name, flavor: 's-1vcpu-2gb' } });
    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(response.status).toBe(400);
    expect(response.body.error).toBe(`project_name ${NAME_REFUSAL}`);
    expect(listed.body).toEqual([]);
  });

  it.each(hostileNames)('refuses a key name with %s (400), creating no key', async (_, name) => {
    const { accountId } = await runtime.newAccount();
    const { session, csrfToken } = await openSession(runtime.deps, accountId);
    const page = { cookie: `session=${session}`, 'x-csrftoken': csrfToken, origin: `http://${new URL(runtime.baseUrl).host}` };

    const response = await runtime.call('POST', '/api/v1/keys', { body: { name }, headers: page });
    const listed = await runtime.call('GET', '/api/v1/keys', { headers: { cookie: page.cookie } });

    expect(response.status).toBe(400);
    expect(response.body.error).toBe(`name ${NAME_REFUSAL}`);
    expect(listed.body.map((key: { name: string }) => key.name)).toEqual(['Test']);
  });

  it('accepts names in any script, emoji (a surrogate pair) included', async () => {
    const { apiKey } = await runtime.newAccount();

    const response = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'сервер-東京-🚀', flavor: 's-1vcpu-2gb' },
    });

    expect(response.status).toBe(202);
    expect(response.body.project_name).toBe('сервер-東京-🚀');
  });
});

describe('ssh_public_key', () => {
  const [type, blob] = ED25519_PUBLIC_KEY.split(' ');

  it.each([
    ['NEL (U+0085)', '\u0085'],
    ['LINE SEPARATOR (U+2028)', '\u2028'],
    ['PARAGRAPH SEPARATOR (U+2029)', '\u2029'],
    ['a vertical tab', '\v'],
    ['a form feed', '\f'],
    ['NUL', '\u0000'],
  ])('refuses a key whose comment smuggles a second key behind %s (400), creating nothing', async (_, separator) => {
    const { apiKey } = await runtime.newAccount();
    const smuggled = `${type} ${blob} x${separator}${separator}command="touch /tmp/pwned" ${type} ${blob} y`;

    const response = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'web', flavor: 's-1vcpu-2gb', ssh_public_key: smuggled },
    });
    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(response.status).toBe(400);
    expect(response.body.error).toBe('Invalid ssh_public_key: only printable ASCII characters and spaces are allowed, on one line');
    expect(listed.body).toEqual([]);
  });
});

describe('response headers', () => {
  it('marks every response no-store and nosniff: successes, errors, unknown routes and the document', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    const { session, csrfToken } = await openSession(runtime.deps, accountId);
    const page = { cookie: `session=${session}`, 'x-csrftoken': csrfToken, origin: `http://${new URL(runtime.baseUrl).host}` };
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'web', flavor: 's-1vcpu-2gb' } });

    const responses = {
      create: created,
      detail: await runtime.call('GET', `/api/v1/instances/${created.body.instance_id}`, { apiKey }),
      list: await runtime.call('GET', '/api/v1/instances', { apiKey }),
      keyCreate: await runtime.call('POST', '/api/v1/keys', { body: { name: 'k' }, headers: page }),
      keyList: await runtime.call('GET', '/api/v1/keys', { headers: { cookie: page.cookie } }),
      unauthorized: await runtime.call('GET', '/api/v1/instances'),
      notFound: await runtime.call('GET', '/api/v1/instances/999999', { apiKey }),
      unknownRoute: await runtime.call('GET', '/api/v1/nowhere'),
      document: await runtime.call('GET', '/api/v1/openapi.json'),
    };

    const seen = Object.fromEntries(
      Object.entries(responses).map(([name, response]) => [
        name,
        [response.headers.get('cache-control'), response.headers.get('x-content-type-options')],
      ]),
    );
    expect(seen).toEqual(Object.fromEntries(Object.keys(responses).map((name) => [name, ['no-store', 'nosniff']])));
    expect([responses.create.status, responses.keyCreate.status, responses.unauthorized.status]).toEqual([202, 201, 401]);
  });
});

describe('409 lifecycle conflict', () => {
  it('names the running action: power_off while a reboot runs', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);
    const path = `/api/v1/instances/${instance.instance_id}/actions`;
    await runtime.simulator.control.config({ action_ms: 5_000 });
    const reboot = await runtime.call('POST', path, { apiKey, body: { type: 'reboot' } });

    const refused = await runtime.call('POST', path, { apiKey, body: { type: 'power_off' } });
    await runtime.simulator.control.config({ action_ms: 75 });
    await runtime.waitForJob(apiKey, reboot.body.job_id);

    expect(reboot.status).toBe(200);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      error: 'lifecycle conflict',
      status: 'active',
      running_action: 'reboot',
      message: 'Cannot power off while reboot is in progress',
      request_id: expect.any(String),
    });
  });

  it('gives the status when nothing runs: power_on on an active instance', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);

    const refused = await runtime.call('POST', `/api/v1/instances/${instance.instance_id}/actions`, { apiKey, body: { type: 'power_on' } });

    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      error: 'lifecycle conflict',
      status: 'active',
      message: 'Cannot power on while the instance is active',
      request_id: expect.any(String),
    });
  });
});

describe('label keys named like what every object inherits', () => {
  it.each(['constructor', 'toString', 'hasOwnProperty'])('stores a label %s on create (202) and PATCH (200)', async (key) => {
    const { apiKey } = await runtime.newAccount();

    const created = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'p', flavor: 's-1vcpu-2gb', labels: { [key]: 'created' } },
    });
    const patched = await runtime.call('PATCH', `/api/v1/instances/${created.body.instance_id}`, {
      apiKey,
      body: { labels: { [key]: 'patched', env: 'prod' } },
    });
    const read = await runtime.call('GET', `/api/v1/instances/${created.body.instance_id}`, { apiKey });
    const selected = await runtime.call('GET', `/api/v1/instances?label_selector=${key}%3Dpatched`, { apiKey });

    expect([created.status, created.body.labels]).toEqual([202, { [key]: 'created' }]);
    expect([patched.status, patched.body.labels]).toEqual([200, { [key]: 'patched', env: 'prod' }]);
    expect(read.body.labels).toEqual({ [key]: 'patched', env: 'prod' });
    expect(selected.body.map((instance: { instance_id: number }) => instance.instance_id)).toEqual([created.body.instance_id]);
  });

  it('refuses a label __proto__ (400) on create and PATCH, changing nothing', async () => {
    const { apiKey } = await runtime.newAccount();
    const existing = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p', flavor: 's-1vcpu-2gb' } });
    const labels = JSON.parse('{"__proto__":"x"}');

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'q', flavor: 's-1vcpu-2gb', labels } });
    const patched = await runtime.call('PATCH', `/api/v1/instances/${existing.body.instance_id}`, { apiKey, body: { labels } });
    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey });

    // The body's parser refuses a prototype key before any schema sees it.
    expect([created.status, created.body.error]).toEqual([400, 'Invalid JSON body']);
    expect([patched.status, patched.body.error]).toEqual([400, 'Invalid JSON body']);
    expect(listed.body.map((instance: { project_name: string; labels: object }) => [instance.project_name, instance.labels])).toEqual([
      ['p', {}],
    ]);
  });

  it('gives the deploy unit back when the create failed before its write was sent', async () => {
    const { apiKey } = await runtime.newAccount();
    // The one write of the create fails inside the process, as the document client's own marshalling can.
    const dynamo = runtime.deps.dynamo as { send(command: unknown, options?: unknown): Promise<unknown> };
    const send = dynamo.send.bind(dynamo);
    const writesInstance = (command: unknown) =>
      command instanceof TransactWriteCommand &&
      (command.input.TransactItems ?? []).some((item) => item.Put?.TableName === runtime.tableNames.instances);
    const failing = vi.spyOn(dynamo, 'send').mockImplementation(async (command, options) => {
      if (!writesInstance(command)) return send(command, options);
      failing.mockRestore();
      throw new Error('Unsupported type passed');
    });

    const failed = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p', flavor: 's-1vcpu-2gb' } });
    const next = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'q', flavor: 's-1vcpu-2gb' } });

    expect(failed.status).toBe(500);
    expect(next.status).toBe(202);
    expect(next.headers.get('ratelimit')?.split(', ')[1]).toMatch(/^"deploy";r=4;t=\d+$/);
  });
});
