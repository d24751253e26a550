import { CANARY_FLAVOR } from '../../infra/constructs/canaries';
import { CANARY_PROJECT_PREFIX, checkApi, createAndDelete, type LifecycleOptions } from '../../functions/canary/checks';
import { useTestRuntime } from '../support/runtime';

/** The canaries' checks, run against the local runtime as CloudWatch Synthetics runs them against the stack. */
const runtime = useTestRuntime();
const quiet = () => undefined;

async function listed(apiKey: string): Promise<{ instance_id: number; project_name: string; status: string }[]> {
  return (await runtime.call('GET', '/api/v1/instances', { apiKey })).body;
}

const lifecycle = (apiKey: string, runId: string): LifecycleOptions => ({
  baseUrl: runtime.baseUrl,
  apiKey,
  flavor: CANARY_FLAVOR,
  activeWithinMs: 30_000,
  deletedWithinMs: 30_000,
  pollMs: 100,
  runId,
  log: quiet,
});

describe('the API check', () => {
  it('passes with a working key: the list and the OpenAPI document', async () => {
    const { apiKey } = await runtime.newAccount();
    const lines: string[] = [];

    await checkApi({ baseUrl: `${runtime.baseUrl}/`, apiKey, log: (line) => lines.push(line) });

    expect(lines).toEqual([
      expect.stringMatching(/^GET \/api\/v1\/instances 200 \d+ ms$/),
      expect.stringMatching(/^GET \/api\/v1\/openapi\.json 200 \d+ ms$/),
    ]);
  });

  it('fails, saying why, when the key no longer works', async () => {
    await expect(checkApi({ baseUrl: runtime.baseUrl, apiKey: 'svcmcp_notAKeyOfThisServiceAtAll00000000000', log: quiet })).rejects.toThrow(
      /^list instances: HTTP 401, expected 200: .*Invalid or revoked API key/,
    );
  });
});

describe('the lifecycle check', () => {
  it('creates the smallest server, sees it active, deletes it and leaves nothing behind', async () => {
    const { apiKey } = await runtime.newAccount();
    const servers = () => runtime.simulator.state().droplets.length;
    const creates = () => runtime.simulator.state().calls['POST /v2/droplets'] ?? 0;
    const [serversBefore, createsBefore] = [servers(), creates()];

    await createAndDelete(lifecycle(apiKey, 'first'));

    expect(await listed(apiKey)).toEqual([]);
    expect(creates()).toBe(createsBefore + 1);
    expect(servers()).toBe(serversBefore);
  });

  it('deletes what an interrupted earlier run left behind, and only that', async () => {
    const { apiKey } = await runtime.newAccount();
    const leftover = await runtime.activeInstance(apiKey);
    const ownLeftover = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: `${CANARY_PROJECT_PREFIX}earlier`, flavor: CANARY_FLAVOR },
    });
    await runtime.waitForStatus(apiKey, ownLeftover.body.instance_id, ['active']);

    await createAndDelete(lifecycle(apiKey, 'second'));

    expect((await listed(apiKey)).map((instance) => instance.instance_id)).toEqual([leftover.instance_id]);
  });

  it('fails when the server cannot be provisioned, and still deletes it', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.simulator.control.faults({ fail_creates: true });
    try {
      await expect(createAndDelete(lifecycle(apiKey, 'third'))).rejects.toThrow(/failed to provision/);
    } finally {
      await runtime.simulator.control.faults({ fail_creates: false });
    }

    expect(await listed(apiKey)).toEqual([]);
  });

  it('fails when the account cannot deploy, creating nothing', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '0' });

    await expect(createAndDelete(lifecycle(apiKey, 'fourth'))).rejects.toThrow(/^create instance: HTTP 402/);
    expect(await listed(apiKey)).toEqual([]);
  });
});
