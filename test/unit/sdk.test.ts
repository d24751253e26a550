import { readFile } from 'node:fs/promises';
import { createVpsClient, VpsApiError } from '../../clients/sdk/index';
import { generatedTypes, typesFile } from '../../clients/sdk/generate-types';

const instance = {
  instance_id: 7,
  vps_id: '42',
  status: 'pending',
  ipv4: null,
  domain: 'vps-7.vps.example.net',
  custom_domain: null,
  root_user: 'root',
  root_password: 'pw',
  ssh_port: 22,
  project_name: 'web',
  plan: { flavor: 's-1vcpu-2gb', vcpu: 1, ram_mb: 2048, disk_gb: 30, hourly_price: 0.01786 },
  created_at: '2026-01-01T00:00:00.000Z',
  ssh_key: { name: 'web-key', fingerprint: null, public_key: 'ssh-ed25519 AAAA', private_key: null },
  activated_at: null,
};

/** A fetch that answers from a script and records what was sent. */
function scripted(...responses: Array<() => Response>) {
  const sent: Request[] = [];
  const fetch = async (request: Request) => {
    sent.push(request);
    const next = responses.shift();
    if (!next) throw new Error('unexpected request');
    return next();
  };
  return { sent, fetch };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const rateLimited = json(429, { error: 'Rate limit exceeded', retry_after: 0, request_id: 'r-429' }, { 'retry-after': '0' });

describe('the SDK types', () => {
  it('are up to date with the OpenAPI document (npm run sdk:types regenerates them)', async () => {
    expect(await readFile(typesFile, 'utf8')).toBe(await generatedTypes());
  });
});

describe('createVpsClient', () => {
  it('sends a fresh Idempotency-Key on each create, and the same one again when a 429 is retried', async () => {
    const { sent, fetch } = scripted(rateLimited, json(202, instance), json(202, { ...instance, instance_id: 8 }));
    const waits: unknown[] = [];
    const client = createVpsClient({
      baseUrl: 'http://127.0.0.1:1',
      apiKey: 'svcmcp_x',
      fetch,
      onRateLimited: (event) => waits.push(event),
    });

    const first = await client.createInstance({ project_name: 'web', flavor: 's-1vcpu-2gb' });
    const second = await client.createInstance({ project_name: 'web', flavor: 's-1vcpu-2gb' });

    const keys = sent.map((request) => request.headers.get('idempotency-key'));
    expect([first.instance_id, second.instance_id]).toEqual([7, 8]);
    expect(waits).toEqual([{ waitSeconds: 0, attempt: 1, maxAttempts: 3 }]);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).not.toBe(keys[0]);
    expect(sent[0]?.headers.get('authorization')).toBe('Bearer svcmcp_x');
    expect(await sent[1]?.json()).toEqual({ project_name: 'web', flavor: 's-1vcpu-2gb' });
  });

  it('sends a keyed create again with the same key after 504 Outcome unknown and 409 still in progress, and returns the replay', async () => {
    const { sent, fetch } = scripted(
      json(504, { error: 'Outcome unknown', message: 'The request ran out of time but may still complete' }, { 'retry-after': '0' }),
      json(
        409,
        { error: 'lifecycle conflict', message: 'A request with this Idempotency-Key is still in progress' },
        { 'retry-after': '0' },
      ),
      json(202, instance, { 'idempotent-replayed': 'true' }),
    );
    const client = createVpsClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'svcmcp_x', fetch });

    const created = await client.createInstance({ project_name: 'web', flavor: 's-1vcpu-2gb' });

    const keys = new Set(sent.map((request) => request.headers.get('idempotency-key')));
    expect(created.instance_id).toBe(7);
    expect(sent).toHaveLength(3);
    expect(keys.size).toBe(1);
  });

  it('returns a 409 that is a real lifecycle conflict at once, without sending it again', async () => {
    const { sent, fetch } = scripted(
      json(409, { error: 'lifecycle conflict', message: 'Cannot power on while the instance is active', request_id: 'r-409' }),
    );
    const client = createVpsClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'svcmcp_x', fetch });

    const error = await client.powerOn(7).catch((caught: unknown) => caught);

    expect(error).toMatchObject({
      status: 409,
      error: 'lifecycle conflict',
      explanation: 'Cannot power on while the instance is active',
      body: { error: 'lifecycle conflict', message: 'Cannot power on while the instance is active', request_id: 'r-409' },
      message: 'lifecycle conflict: Cannot power on while the instance is active (HTTP 409, request id r-409)',
    });
    expect(sent).toHaveLength(1);
  });

  it("waits a second on a 429 that names no Retry-After, as the gateway's own throttle answers", async () => {
    const { fetch } = scripted(json(429, { message: 'Too Many Requests' }), json(200, []));
    const waits: Array<{ waitSeconds: number }> = [];
    const client = createVpsClient({
      baseUrl: 'http://127.0.0.1:1',
      apiKey: 'svcmcp_x',
      fetch,
      onRateLimited: (event) => waits.push(event),
    });

    const listed = await client.listInstances();

    expect([listed, waits.map((wait) => wait.waitSeconds)]).toEqual([[], [1]]);
  });

  it('gives up after the bounded number of 429 retries with the status, text and request id', async () => {
    const { sent, fetch } = scripted(rateLimited, rateLimited, rateLimited);
    const client = createVpsClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'svcmcp_x', fetch, rateLimitRetries: 2 });

    const error = await client.listInstances().catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(VpsApiError);
    expect(error).toMatchObject({ status: 429, error: 'Rate limit exceeded', requestId: 'r-429', retryAfter: 0 });
    expect(sent).toHaveLength(3);
  });

  it('does not wait out a 429 that asks for longer than the longest wait it accepts', async () => {
    const { sent, fetch } = scripted(
      json(429, { error: 'Rate limit exceeded', retry_after: 3000, request_id: 'r' }, { 'retry-after': '3000' }),
    );
    const client = createVpsClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'svcmcp_x', fetch });

    const error = await client.createInstance({ project_name: 'web', flavor: 's-1vcpu-2gb' }).catch((caught: unknown) => caught);

    expect(error).toMatchObject({ status: 429, retryAfter: 3000, message: 'Rate limit exceeded (HTTP 429, request id r)' });
    expect(sent).toHaveLength(1);
  });

  it('sends a read again after a dropped connection, but not a delete, which has no Idempotency-Key', async () => {
    const dropped = () => {
      throw new TypeError('fetch failed');
    };
    const reads = scripted(dropped, json(200, []));
    const deletes = scripted(dropped, json(200, { instance_id: 7, status: 'deleting', job_id: null }));

    const listed = await createVpsClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'svcmcp_x', fetch: reads.fetch }).listInstances();
    const deleting = createVpsClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'svcmcp_x', fetch: deletes.fetch }).deleteInstance(7);

    expect(listed).toEqual([]);
    expect(reads.sent).toHaveLength(2);
    await expect(deleting).rejects.toMatchObject({
      name: 'VpsConnectionError',
      message: 'cannot reach the service at http://127.0.0.1:1',
      url: 'http://127.0.0.1:1/api/v1/instances/7',
      outcomeUnknown: true,
    });
    expect(deletes.sent).toHaveLength(1);
  });

  it('takes the request id from the header when the body has none', async () => {
    const { fetch } = scripted(() => new Response('', { status: 502, statusText: 'Bad Gateway', headers: { 'x-request-id': 'r-h' } }));
    const client = createVpsClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'svcmcp_x', fetch });

    await expect(client.getInstance(7)).rejects.toMatchObject({ status: 502, error: 'Bad Gateway', requestId: 'r-h' });
  });
});
