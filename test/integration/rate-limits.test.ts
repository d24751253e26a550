import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { issueApiKey, openSession } from '../../shared/domain/accounts';
import { updateAccountFlags } from '../../shared/store/accounts';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

/** The next whole minute of the wall clock, at least a second away. */
const nextMinute = () => Math.ceil((Date.now() + 1_000) / 60_000) * 60_000;

/**
 * Sets the clock the service reads (its handlers run in this process): standing still at `ms`, or running on from
 * it. Only Date is faked; timers and I/O run as usual.
 */
function useClock(ms: number, { running = false } = {}) {
  vi.useRealTimers();
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: running });
  vi.setSystemTime(ms);
}
afterEach(() => {
  vi.useRealTimers();
});

/** The account's general window as stored: its entries (microseconds), newest first. */
async function storedEntries(accountId: string, name = 'general'): Promise<number[]> {
  const { Item } = await runtime.deps.dynamo.send(
    new GetCommand({ TableName: runtime.tableNames.counters, Key: { name: `rate#${name}#${accountId}` }, ConsistentRead: true }),
  );
  return (Item?.times ?? []) as number[];
}

describe('rate limits', () => {
  it('announces the policies and what remains on every instance response', async () => {
    const { apiKey } = await runtime.newAccount();

    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey });
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p', flavor: 's-1vcpu-2gb' } });
    const missing = await runtime.call('GET', '/api/v1/instances/999999', { apiKey });

    expect(listed.headers.get('ratelimit-policy')).toBe('"general";q=60;w=60');
    expect(listed.headers.get('ratelimit')).toMatch(/^"general";r=59;t=\d+$/);
    expect(created.headers.get('ratelimit-policy')).toBe('"general";q=60;w=60, "deploy";q=5;w=3600');
    expect(created.headers.get('ratelimit')).toMatch(/^"general";r=58;t=\d+, "deploy";r=4;t=\d+$/);
    expect([missing.status, missing.body.error]).toEqual([404, 'Instance not found']);
    expect(missing.headers.get('ratelimit')).toMatch(/^"general";r=57;t=\d+$/);
  });

  it('allows exactly 60 of 100 parallel requests, wherever the clock stands: here across a minute boundary', async () => {
    const { apiKey } = await runtime.newAccount();
    // The service's clock starts 100 ms before a whole minute and runs on from there, whatever the time of the run.
    useClock(nextMinute() - 100, { running: true });

    const responses = await Promise.all(Array.from({ length: 100 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));

    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40);
    const refused = responses.find((r) => r.status === 429)!;
    expect(refused.body).toEqual({ error: 'Rate limit exceeded', retry_after: expect.any(Number), request_id: expect.any(String) });
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.retry_after));
    expect(refused.headers.get('ratelimit')).toMatch(/^"general";r=0;t=\d+$/);
  });

  it('limits each console session to 60 requests in any 60 seconds, with the spec’s 429 and Retry-After', async () => {
    const { accountId } = await runtime.newAccount();
    const { session, csrfToken } = await openSession(runtime.deps, accountId);
    const other = await openSession(runtime.deps, accountId);
    const read = (token: string) => runtime.call('GET', '/api/v1/account/activity', { headers: { cookie: `session=${token}` } });

    const responses = await Promise.all(Array.from({ length: 100 }, () => read(session)));
    const otherSession = await read(other.session);
    const signOut = await runtime.call('POST', '/api/v1/auth/sign-out', {
      headers: { cookie: `session=${session}`, 'x-csrftoken': csrfToken, origin: runtime.baseUrl },
    });

    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40);
    const refused = responses.find((r) => r.status === 429)!;
    expect(refused.body).toEqual({ error: 'Rate limit exceeded', retry_after: expect.any(Number), request_id: expect.any(String) });
    expect(refused.body.retry_after).toBeGreaterThanOrEqual(1);
    expect(refused.body.retry_after).toBeLessThanOrEqual(60);
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.retry_after));
    expect(refused.headers.get('ratelimit-policy')).toBe('"session";q=60;w=60');
    expect(refused.headers.get('ratelimit')).toMatch(/^"session";r=0;t=\d+$/);
    expect(otherSession.status).toBe(200);
    expect(signOut.status).toBe(200);
  });

  it('shares one limit between all keys of an account', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    const { fullKey: secondKey } = await issueApiKey(runtime.deps, accountId, 'second');

    const first = await Promise.all(Array.from({ length: 30 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));
    const second = await Promise.all(Array.from({ length: 30 }, () => runtime.call('GET', '/api/v1/instances', { apiKey: secondKey })));
    const over = await runtime.call('GET', '/api/v1/instances', { apiKey: secondKey });

    expect([...first, ...second].every((r) => r.status === 200)).toBe(true);
    expect([over.status, over.body.error]).toEqual([429, 'Rate limit exceeded']);
  });

  it('does not use deploy quota for a create the general limit refused', async () => {
    const { apiKey } = await runtime.newAccount();
    await Promise.all(Array.from({ length: 60 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));

    const refused = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p', flavor: 's-1vcpu-2gb' } });

    expect([refused.status, refused.body.error]).toEqual([429, 'Rate limit exceeded']);
    expect(refused.headers.get('ratelimit')).toMatch(/"deploy";r=5;/);
  });

  it('allows 5 deploys an hour and refuses the sixth with the wait in seconds', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '100' });

    const accepted = [];
    for (let i = 0; i < 5; i++) {
      accepted.push(await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: `p${i}`, flavor: 's-1vcpu-2gb' } }));
    }
    const sixth = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p6', flavor: 's-1vcpu-2gb' } });
    const list = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(accepted.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
    expect([sixth.status, sixth.body.error]).toEqual([429, 'Rate limit exceeded']);
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(sixth.headers.get('retry-after'))).toBeLessThanOrEqual(3600);
    expect(sixth.body.retry_after).toBe(Number(sixth.headers.get('retry-after')));
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(5);
  });

  it('answers with the standing before the limits: a suspended account over its limit gets 403, with the window in the headers', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    const spent = await Promise.all(Array.from({ length: 60 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));
    await updateAccountFlags(runtime.deps, accountId, { suspended: true });

    const refused = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(spent.filter((r) => r.status === 200)).toHaveLength(60);
    expect([refused.status, refused.body.error]).toEqual([403, 'Account suspended']);
    expect(refused.headers.get('ratelimit')).toMatch(/^"general";r=0;t=\d+$/);
  });

  it('holds 60 over any 60 s at a clock edge: 60 at :59.7 leave nothing for :01.0, and come back exactly 60 s later', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    const list = (count: number) => Promise.all(Array.from({ length: count }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));
    const minute = nextMinute();
    const firstAt = minute - 300;

    // The service's clock stands still wherever it is set: each decision below is made at exactly that moment.
    useClock(firstAt);
    const first = await list(60);
    useClock(minute + 1_000);
    const second = await list(20);
    useClock(firstAt + 59_999);
    const lastMillisecond = await list(1);
    useClock(firstAt + 60_000);
    const third = await list(61);

    expect(first.map((r) => r.status)).toEqual(Array.from({ length: 60 }, () => 200));
    // A fixed window would start afresh at the minute; the sliding one still holds the 60 from 1.3 s before.
    expect(second.map((r) => [r.status, r.body.error, r.body.retry_after])).toEqual(
      Array.from({ length: 20 }, () => [429, 'Rate limit exceeded', 59]),
    );
    expect(second[0]!.headers.get('ratelimit')).toBe('"general";r=0;t=59');
    expect([lastMillisecond[0]!.status, lastMillisecond[0]!.body.retry_after]).toEqual([429, 1]);
    // Exactly 60 s after the first burst its requests have left the window, all at once: 60 more, and not one over.
    expect(third.filter((r) => r.status === 200)).toHaveLength(60);
    expect(third.filter((r) => r.status === 429)).toHaveLength(1);
    const newest = (await storedEntries(accountId)).slice(0, 60).map((entry) => Math.floor(entry / 1000));
    expect(newest).toEqual(Array.from({ length: 60 }, () => firstAt + 60_000));
  });

  it('answers Retry-After, retry_after and RateLimit t= with the seconds until the oldest counted request leaves', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    await runtime.call('GET', '/api/v1/instances', { apiKey });
    await new Promise((resolve) => setTimeout(resolve, 3_200));
    await Promise.all(Array.from({ length: 59 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));
    const [oldest] = (await storedEntries(accountId)).slice(-1);

    const sentAt = Date.now();
    const refused = await runtime.call('GET', '/api/v1/instances', { apiKey });
    const receivedAt = Date.now();

    // The server decided at some moment between sending and receiving; each moment gives one exact answer.
    const leavesAt = Math.floor(oldest! / 1000) + 60_000;
    const possible = new Set([Math.ceil((leavesAt - receivedAt) / 1000), Math.ceil((leavesAt - sentAt) / 1000)]);
    expect([refused.status, refused.body.error]).toEqual([429, 'Rate limit exceeded']);
    expect(possible).toContain(refused.body.retry_after);
    expect(refused.body.retry_after).toBeLessThanOrEqual(57);
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.retry_after));
    expect(refused.headers.get('ratelimit')).toBe(`"general";r=0;t=${refused.body.retry_after}`);
  });

  it.each([
    ['400 (a typo)', { project_name: 'p', flavor: 's-99vcpu' }, 400, 'Invalid flavor: s-99vcpu'],
    [
      '402 (no funds)',
      { project_name: 'p', flavor: 's-1vcpu-2gb' },
      402,
      'Insufficient balance to deploy: the balance must be above $3.00',
    ],
  ])('gives the deploy unit back when a create is refused with %s, so five of them lock nobody out', async (_, body, status, text) => {
    const { apiKey } = await runtime.newAccount({ depositUsd: status === 402 ? '2' : '50' });

    const refusals = [];
    for (let i = 0; i < 6; i++) refusals.push(await runtime.call('POST', '/api/v1/instances', { apiKey, body }));

    expect(refusals.map((r) => [r.status, r.body.error])).toEqual(Array.from({ length: 6 }, () => [status, text]));
    expect(refusals.map((r) => r.headers.get('ratelimit')?.split(', ')[1])).toEqual(
      Array.from({ length: 6 }, () => expect.stringMatching(/^"deploy";r=5;t=\d+$/)),
    );
  });

  it('still counts a create that was accepted: the sixth within the hour is refused', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '100' });
    await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p', flavor: 's-99vcpu' } });

    const accepted = [];
    for (let i = 0; i < 5; i++)
      accepted.push(await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: `p${i}`, flavor: 's-1vcpu-2gb' } }));
    const sixth = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p6', flavor: 's-1vcpu-2gb' } });

    expect(accepted.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
    expect([sixth.status, sixth.body.error]).toEqual([429, 'Rate limit exceeded']);
    expect(sixth.body.retry_after).toBeGreaterThan(3590);
  });
});
