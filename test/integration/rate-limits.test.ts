import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo } from '../../shared/aws';
import { issueApiKey } from '../../shared/domain/accounts';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

/** The account's general window as stored: its entries (microseconds), newest first. */
async function storedEntries(accountId: string, name = 'general'): Promise<number[]> {
  const { Item } = await dynamo().send(
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
    expect(missing.status).toBe(404);
    expect(missing.headers.get('ratelimit')).toMatch(/^"general";r=57;t=\d+$/);
  });

  it('allows exactly 60 of 100 parallel requests, wherever the clock stands (the window slides: no edge to straddle)', async () => {
    const { apiKey } = await runtime.newAccount();

    const responses = await Promise.all(Array.from({ length: 100 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));

    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40);
    const refused = responses.find((r) => r.status === 429)!;
    expect(refused.body).toEqual({ error: 'Rate limit exceeded', retry_after: expect.any(Number), request_id: expect.any(String) });
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.retry_after));
    expect(refused.headers.get('ratelimit')).toMatch(/^"general";r=0;t=\d+$/);
  });

  it('shares one limit between all keys of an account', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    const { fullKey: secondKey } = await issueApiKey(accountId, 'second');

    const first = await Promise.all(Array.from({ length: 30 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));
    const second = await Promise.all(Array.from({ length: 30 }, () => runtime.call('GET', '/api/v1/instances', { apiKey: secondKey })));
    const over = await runtime.call('GET', '/api/v1/instances', { apiKey: secondKey });

    expect([...first, ...second].every((r) => r.status === 200)).toBe(true);
    expect(over.status).toBe(429);
  });

  it('does not use deploy quota for a create the general limit refused', async () => {
    const { apiKey } = await runtime.newAccount();
    await Promise.all(Array.from({ length: 60 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));

    const refused = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p', flavor: 's-1vcpu-2gb' } });

    expect(refused.status).toBe(429);
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
    expect(sixth.status).toBe(429);
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(sixth.headers.get('retry-after'))).toBeLessThanOrEqual(3600);
    expect(sixth.body.retry_after).toBe(Number(sixth.headers.get('retry-after')));
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(5);
  });

  it('holds 60 over any 60 seconds: a burst just after the first does not double up at an edge', async () => {
    const { apiKey } = await runtime.newAccount();
    const first = await Promise.all(Array.from({ length: 60 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    const second = await Promise.all(Array.from({ length: 20 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));

    expect(first.every((r) => r.status === 200)).toBe(true);
    expect(second.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 429));
    for (const refused of second) expect(refused.body.error).toBe('Rate limit exceeded');
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
    expect(refused.status).toBe(429);
    expect(possible).toContain(refused.body.retry_after);
    expect(refused.body.retry_after).toBeLessThanOrEqual(57);
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.retry_after));
    expect(refused.headers.get('ratelimit')).toBe(`"general";r=0;t=${refused.body.retry_after}`);
  });

  it.each([
    ['400 (a typo)', { project_name: 'p', flavor: 's-99vcpu' }, 400, 'Invalid flavor: s-99vcpu'],
    ['402 (no funds)', { project_name: 'p', flavor: 's-1vcpu-2gb' }, 402, 'Insufficient balance to deploy: the balance must be above $3.00'],
  ])('gives the deploy unit back when a create is refused with %s, so five of them lock nobody out', async (_, body, status, text) => {
    const { apiKey } = await runtime.newAccount({ depositUsd: status === 402 ? '2' : '50' });

    const refusals = [];
    for (let i = 0; i < 6; i++) refusals.push(await runtime.call('POST', '/api/v1/instances', { apiKey, body }));

    expect(refusals.map((r) => [r.status, r.body.error])).toEqual(Array.from({ length: 6 }, () => [status, text]));
    expect(refusals.map((r) => r.headers.get('ratelimit')?.split(', ')[1])).toEqual(Array.from({ length: 6 }, () => expect.stringMatching(/^"deploy";r=5;t=\d+$/)));
  });

  it('still counts a create that was accepted: the sixth within the hour is refused', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '100' });
    await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p', flavor: 's-99vcpu' } });

    const accepted = [];
    for (let i = 0; i < 5; i++) accepted.push(await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: `p${i}`, flavor: 's-1vcpu-2gb' } }));
    const sixth = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p6', flavor: 's-1vcpu-2gb' } });

    expect(accepted.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
    expect([sixth.status, sixth.body.error]).toEqual([429, 'Rate limit exceeded']);
    expect(sixth.body.retry_after).toBeGreaterThan(3590);
  });
});
