import { issueApiKey } from '../../shared/domain/accounts';
import { fixedWindow } from '../../shared/domain/rate-limits';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

/** Waits for a fresh general window when the current one ends too soon for a burst to fit in it. */
async function awaitRoomyWindow() {
  const { resetSeconds } = fixedWindow('general', Date.now());
  if (resetSeconds < 8) await new Promise((resolve) => setTimeout(resolve, resetSeconds * 1000 + 50));
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

  it('allows exactly 60 of 100 parallel requests in one window', async () => {
    const { apiKey } = await runtime.newAccount();
    await awaitRoomyWindow();

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
    await awaitRoomyWindow();

    const first = await Promise.all(Array.from({ length: 30 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));
    const second = await Promise.all(Array.from({ length: 30 }, () => runtime.call('GET', '/api/v1/instances', { apiKey: secondKey })));
    const over = await runtime.call('GET', '/api/v1/instances', { apiKey: secondKey });

    expect([...first, ...second].every((r) => r.status === 200)).toBe(true);
    expect(over.status).toBe(429);
  });

  it('does not use deploy quota for a create the general limit refused', async () => {
    const { apiKey } = await runtime.newAccount();
    await awaitRoomyWindow();
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
});
