import { cliHome, runVps, type CliHome } from '../support/cli';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();
let home: CliHome;
beforeAll(async () => {
  home = await cliHome();
});
afterAll(() => home.remove());

/** Sends requests until the general limit refuses one. */
async function exhaustGeneralLimit(apiKey: string) {
  for (let sent = 0; sent < 120; sent += 10) {
    const burst = await Promise.all(Array.from({ length: 10 }, () => runtime.call('GET', '/api/v1/instances', { apiKey })));
    if (burst.some((response) => response.status === 429)) return;
  }
  throw new Error('the general limit never refused');
}

describe('vps on a 429', () => {
  // The general window is a real sliding one of 60 s, so the wait asked for is up to a minute.
  it('says it is waiting, waits Retry-After and retries, then answers', { timeout: 300_000 }, async () => {
    const { apiKey } = await runtime.newAccount();
    const env = { VPS_API_URL: runtime.baseUrl, VPS_API_KEY: apiKey };

    // On a slow machine the window can end between the last refusal and the CLI's first request; then the CLI
    // is simply answered, and the next attempt starts early in a fresh window.
    let run: Awaited<ReturnType<typeof runVps>> | undefined;
    for (let attempt = 0; attempt < 3 && !run?.stderr.startsWith('Rate limit exceeded'); attempt++) {
      await exhaustGeneralLimit(apiKey);
      run = await runVps(home, ['instances', 'list', '--json'], { env });
    }

    expect(run?.code).toBe(0);
    expect(JSON.parse(run!.stdout)).toEqual([]);
    expect(run?.stderr).toMatch(/^Rate limit exceeded: waiting \d+ s before retrying \(1 of 3\)\n$/);
  });

  it('does not sit out an hour-long deploy limit: it exits 1 with the text, request id and wait', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '100' });
    for (let i = 0; i < 5; i++)
      await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: `p${i}`, flavor: 's-1vcpu-2gb' } });

    const run = await runVps(home, ['instances', 'create', '--name', 'sixth', '--flavor', 's-1vcpu-2gb'], {
      env: { VPS_API_URL: runtime.baseUrl, VPS_API_KEY: apiKey },
    });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: Rate limit exceeded \(HTTP 429, request id [0-9a-f-]{36}; retry after \d+ s\)\n$/);
  });
});
