import { Agent, request } from 'node:http';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { installDynamoCallRecorder, recordDynamoCalls, type DynamoCall } from '../../bench/dynamo-calls';
import { openSession } from '../../shared/domain/accounts';
import { generateApiKey, hashApiKey } from '../../shared/model/api-keys';
import { contractViolations } from '../support/contract';
import { useTestRuntime } from '../support/runtime';

/** The DynamoDB calls of the requests made while a list is being recorded (all routes, in this process). */
let recording: DynamoCall[] | undefined;
const runtime = useTestRuntime({
  // The production limit (20 failed authentications per address in any 60 s): the test runtime otherwise raises it.
  env: { FAILED_AUTH_LIMIT: '' },
  aroundInvocation: (_route, invoke) => (recording ? recordDynamoCalls(recording, invoke) : invoke()),
});
beforeAll(() => installDynamoCallRecorder(runtime.deps));

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
}

/**
 * Loopback addresses other than 127.0.0.1 stand for other clients: the local gateway, like API Gateway, takes the
 * connection's source address. Each address keeps its connections open, as a real client would.
 */
const agents = new Map<string, Agent>();
function agentFor(localAddress: string): Agent {
  let agent = agents.get(localAddress);
  if (!agent) agents.set(localAddress, (agent = new Agent({ keepAlive: true, maxSockets: 16, localAddress })));
  return agent;
}
afterAll(() => {
  for (const agent of agents.values()) agent.destroy();
});

function call(from: string, method: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${runtime.baseUrl}${path}`, { method, headers, agent: agentFor(from) }, (incoming) => {
      let text = '';
      incoming.setEncoding('utf8');
      incoming.on('data', (chunk: string) => (text += chunk));
      incoming.on('end', () => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(incoming.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
        const body = text ? JSON.parse(text) : undefined;
        const status = incoming.statusCode ?? 0;
        const violations = contractViolations(method, path, status, responseHeaders, body);
        if (violations.length > 0) reject(new Error(`response breaks the OpenAPI document:\n${violations.join('\n')}`));
        else resolve({ status, headers: responseHeaders, body });
      });
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
/** A key with our prefix, length and a valid checksum that no account holds: it passes every check but the lookup. */
const forgedKey = () => generateApiKey().fullKey;

const countOf = (answers: Answer[], status: number) => answers.filter((answer) => answer.status === status).length;

describe('payment webhooks with signatures that fail', () => {
  it('answer 400 up to the source address’s limit, then 429, while other addresses are not held back', async () => {
    const forger = '127.0.0.9';
    const forged = { 'stripe-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` };

    const failures: Answer[] = [];
    for (let i = 0; i < 20; i++) failures.push(await call(forger, 'POST', '/api/v1/billing/stripe/webhook', forged));
    const refused = await call(forger, 'POST', '/api/v1/billing/stripe/webhook', forged);
    const elsewhere = await call('127.0.0.10', 'POST', '/api/v1/billing/stripe/webhook', forged);

    expect(countOf(failures, 400)).toBe(20);
    expect(failures[0]!.body.error).toBe('Invalid signature');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(elsewhere.status).toBe(400);
  });
});

describe('failed authentications are limited per source address', () => {
  it('answers the first 20 in any 60 s with 401, then 429 with the wait, while good keys from that address still work', async () => {
    const { apiKey } = await runtime.newAccount();
    const attacker = '127.0.0.2';

    const failures = [];
    for (let i = 0; i < 20; i++) failures.push(await call(attacker, 'GET', '/api/v1/instances', bearer(forgedKey())));
    const refused = await call(attacker, 'GET', '/api/v1/instances', bearer(forgedKey()));
    const good = await call(attacker, 'GET', '/api/v1/instances', bearer(apiKey));
    const elsewhere = await call('127.0.0.1', 'GET', '/api/v1/instances', bearer(forgedKey()));

    expect(failures.map((answer) => [answer.status, answer.body.error])).toEqual(
      Array.from({ length: 20 }, () => [401, 'Invalid or revoked API key']),
    );
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'Rate limit exceeded', retry_after: expect.any(Number), request_id: expect.any(String) });
    expect(refused.body.retry_after).toBeGreaterThanOrEqual(55);
    expect(refused.body.retry_after).toBeLessThanOrEqual(60);
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.retry_after));
    expect(refused.headers.get('ratelimit-policy')).toBe('"failed-auth";q=20;w=60');
    expect(refused.headers.get('ratelimit')).toBe(`"failed-auth";r=0;t=${refused.body.retry_after}`);
    expect(good.status).toBe(200);
    expect(good.headers.get('ratelimit-policy')).toBe('"general";q=60;w=60');
    expect([elsewhere.status, elsewhere.body.error]).toEqual([401, 'Invalid or revoked API key']);
  });

  it('counts every kind of failed authentication, sessions too, and refuses them all once over the limit', async () => {
    const attacker = '127.0.0.3';
    const kinds = [
      {},
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer sk_live_abcdef' },
      { authorization: `Bearer ${forgedKey().slice(0, -1)}x` },
      bearer(forgedKey()),
    ];

    const answers = [];
    for (let i = 0; i < 20; i++) answers.push(await call(attacker, 'GET', '/api/v1/instances', kinds[i % kinds.length]));
    const session = await call(attacker, 'GET', '/api/v1/keys', { cookie: 'session=forged' });
    const missingHeader = await call(attacker, 'GET', '/api/v1/instances');

    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 20 }, () => 401));
    expect([session.status, session.body.error, session.headers.get('ratelimit-policy')]).toEqual([
      429,
      'Rate limit exceeded',
      '"failed-auth";q=20;w=60',
    ]);
    expect([missingHeader.status, missingHeader.body.error]).toEqual([429, 'Rate limit exceeded']);
  });

  it('lets a session from a limited address in, like a good key', async () => {
    const { accountId } = await runtime.newAccount();
    const { session } = await openSession(runtime.deps, accountId);
    const attacker = '127.0.0.4';
    for (let i = 0; i < 21; i++) await call(attacker, 'GET', '/api/v1/keys', { cookie: `session=forged${i}` });

    const refused = await call(attacker, 'GET', '/api/v1/keys', { cookie: 'session=forged' });
    const good = await call(attacker, 'GET', '/api/v1/keys', { cookie: `session=${session}` });

    expect([refused.status, refused.body.error]).toEqual([429, 'Rate limit exceeded']);
    expect(good.status).toBe(200);
  });
});

describe('a forged key costs no repeated database read', () => {
  it('reads a forged key once while it is remembered, and a limited address costs no write', async () => {
    const attacker = '127.0.0.5';
    const key = forgedKey();
    const operations = (calls: DynamoCall[]) => calls.map((c) => `${c.operation.replace(/Command$/, '')} ${c.table?.split('-').pop()}`);

    // Ten tries with one forged key: one key read; each failure is still counted for the address (ten writes).
    const repeated: DynamoCall[] = (recording = []);
    const first = [];
    for (let i = 0; i < 10; i++) first.push(await call(attacker, 'GET', '/api/v1/instances', bearer(key)));
    // Ten more reach the limit, and the window refuses the next: from then on the address is refused with no call.
    const more = [];
    for (let i = 0; i < 11; i++) more.push(await call(attacker, 'GET', '/api/v1/instances', bearer(key)));
    const limited: DynamoCall[] = (recording = []);
    const refused = [];
    for (let i = 0; i < 10; i++) refused.push(await call(attacker, 'GET', '/api/v1/instances', bearer(key)));
    // A new forged key each time costs its one lookup, but no write: the address is known to be over its limit.
    const distinct: DynamoCall[] = (recording = []);
    for (let i = 0; i < 5; i++) refused.push(await call(attacker, 'GET', '/api/v1/instances', bearer(forgedKey())));
    recording = undefined;

    expect(first.map((answer) => answer.status)).toEqual(Array.from({ length: 10 }, () => 401));
    expect(refused.map((answer) => answer.status)).toEqual(Array.from({ length: 15 }, () => 429));
    expect(operations(repeated).filter((op) => op === 'GetItem apiKeys')).toHaveLength(1);
    expect(more.map((answer) => answer.status)).toEqual([...Array.from({ length: 10 }, () => 401), 429]);
    expect(operations(repeated).filter((op) => op === 'UpdateItem counters')).toHaveLength(21);
    expect(operations(limited)).toEqual([]);
    expect(operations(distinct)).toEqual(Array.from({ length: 5 }, () => 'GetItem apiKeys'));
  });

  it('never remembers a key as good: a key revoked after a successful request is refused on the next one', async () => {
    const { accountId, apiKey, keyId } = await runtime.newAccount();
    const { session, csrfToken } = await openSession(runtime.deps, accountId);
    const page = { cookie: `session=${session}`, 'x-csrftoken': csrfToken };

    const before = await call('127.0.0.1', 'GET', '/api/v1/instances', bearer(apiKey));
    const revoked = await runtime.call('DELETE', `/api/v1/keys/${keyId}`, { headers: page });
    const after = await call('127.0.0.1', 'GET', '/api/v1/instances', bearer(apiKey));

    expect([before.status, revoked.status]).toEqual([200, 200]);
    expect([after.status, after.body.error]).toEqual([401, 'Invalid or revoked API key']);
  });
});

describe('the negative cache', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('refuses a key that appears right after it was found unknown for exactly 5 s, then serves it', async () => {
    const { apiKey } = await runtime.newAccount();
    const keyHash = hashApiKey(apiKey);
    const { Item } = await runtime.deps.dynamo.send(new GetCommand({ TableName: runtime.tableNames.apiKeys, Key: { key_hash: keyHash } }));
    await runtime.deps.dynamo.send(new DeleteCommand({ TableName: runtime.tableNames.apiKeys, Key: { key_hash: keyHash } }));
    const at = (ms: number) => {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(ms);
    };
    const start = Date.now();

    at(start);
    const unknown = await call('127.0.0.7', 'GET', '/api/v1/instances', bearer(apiKey));
    await runtime.deps.dynamo.send(new PutCommand({ TableName: runtime.tableNames.apiKeys, Item }));
    at(start + 4_999);
    const stillRemembered = await call('127.0.0.7', 'GET', '/api/v1/instances', bearer(apiKey));
    at(start + 5_000);
    const forgotten = await call('127.0.0.7', 'GET', '/api/v1/instances', bearer(apiKey));

    expect([unknown.status, stillRemembered.status, forgotten.status]).toEqual([401, 401, 200]);
  });
});

describe('a flood of forged keys from one address', () => {
  it("refuses none of another tenant's requests while the address is cut off", async () => {
    const { apiKey } = await runtime.newAccount();
    const tenant = () => call('127.0.0.1', 'GET', '/api/v1/instances', bearer(apiKey));
    const REQUESTS = 15;

    // The tenant's requests while forged keys arrive from one address, 10 at a time, for as long as the tenant's
    // requests take (bounded: at most 2,000 forged requests, 30 s). What a forged request costs the service is
    // asserted above as DynamoDB calls ('a forged key costs no repeated database read'), not as a time.
    let tenantDone = false;
    const forged: Answer[] = [];
    const stopAt = Date.now() + 30_000;
    const flood = Promise.all(
      Array.from({ length: 10 }, async () => {
        while (!tenantDone && forged.length < 2_000 && Date.now() < stopAt) {
          forged.push(await call('127.0.0.6', 'GET', '/api/v1/instances', bearer(forgedKey())));
        }
      }),
    );
    const during = [];
    try {
      for (let i = 0; i < REQUESTS; i++) during.push(await tenant());
    } finally {
      tenantDone = true;
      await flood;
    }

    // The address's first 20 are 401, every one after them 429; the tenant gets every answer it asked for.
    expect(forged.length).toBeGreaterThan(50);
    expect([countOf(forged, 401), countOf(forged, 429)]).toEqual([20, forged.length - 20]);
    expect(during.map((answer) => answer.status)).toEqual(Array.from({ length: REQUESTS }, () => 200));
  });
});
