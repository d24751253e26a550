import { cliHome, runVps, type CliHome } from '../support/cli';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();
let home: CliHome;
beforeAll(async () => {
  home = await cliHome();
});
afterAll(() => home.remove());

describe('vps on a 429', () => {
  // The general window is a real sliding one of 60 s, so the wait asked for is up to a minute.
  it('says it is waiting, waits Retry-After and retries, then answers', { timeout: 150_000 }, async () => {
    const { apiKey } = await runtime.newAccount();
    const burst = await Promise.all(Array.from({ length: 61 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));
    expect(burst.filter((response) => response.status === 429)).not.toHaveLength(0);

    const run = await runVps(home, ['instances', 'list', '--json'], { env: { VPS_API_URL: runtime.baseUrl, VPS_API_KEY: apiKey } });

    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([]);
    expect(run.stderr).toMatch(/^Rate limit exceeded: waiting \d+ s before retrying \(1 of 3\)\n/);
  });

  it('does not sit out an hour-long deploy limit: it exits 1 with the text, request id and wait', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '100' });
    for (let i = 0; i < 5; i++) await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: `p${i}`, flavor: 's-1vcpu-2gb' } });

    const run = await runVps(home, ['instances', 'create', '--name', 'sixth', '--flavor', 's-1vcpu-2gb'], { env: { VPS_API_URL: runtime.baseUrl, VPS_API_KEY: apiKey } });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: Rate limit exceeded \(HTTP 429, request id [0-9a-f-]{36}; retry after \d+ s\)\n$/);
  });
});
