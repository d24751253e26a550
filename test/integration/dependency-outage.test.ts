import { inject } from 'vitest';
import { upstreamTagOf } from '../../shared/domain/instances';
import { getInstanceItem } from '../../shared/store/instances';
import { getJob } from '../../shared/store/jobs';
import { startOutageProxy } from '../support/outage-proxy';
import { useTestRuntime } from '../support/runtime';

const OUTAGE_MS = 3_000;

/** The service reaches the run's DynamoDB Local only through this proxy, which can make it unreachable for a while. */
const proxy = await startOutageProxy(inject('dynamodbEndpoint'));
afterAll(() => proxy.close());

/** The instance whose provisioning meets the outage; its job, and the outage, once it has begun. */
let target: number | undefined;
let jobId: string | undefined;
let outage: Promise<{ over: Promise<void> }> | undefined;

const runtime = useTestRuntime({
  dynamodbEndpoint: proxy.endpoint,
  // Retry pauses locally last this long each (on AWS they back off from 2 s to 30 s): the Transient policy's retries
  // then span several seconds, as they do on AWS, rather than a fraction of one.
  retryMs: 500,
  aroundTask: async (workflow, state, invoke, input) => {
    // The first check of the target's server finds DynamoDB gone: the instance is provisioning, its server made.
    const step = input as { instance_id: number; job_id: string };
    if (workflow === 'provision' && state === 'CheckServer' && step.instance_id === target && !outage) {
      jobId = step.job_id;
      outage = proxy.outage(OUTAGE_MS);
      await outage;
    }
    return invoke();
  },
});

describe('a DynamoDB outage of a few seconds', () => {
  it('leaves a create that is provisioning to finish active, its server kept', async () => {
    const { apiKey } = await runtime.newAccount();
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'outage', flavor: 's-1vcpu-2gb' } });
    expect(created.status).toBe(202);
    target = created.body.instance_id;

    await expect.poll(() => outage, { timeout: 10_000 }).toBeDefined();
    await (
      await outage!
    ).over;
    const active = await runtime.waitForStatus(apiKey, target!, ['active', 'failed'], 15_000);
    await runtime.stepFunctions.idle();

    expect(active.status).toBe('active');
    const instance = await getInstanceItem(runtime.deps, target!);
    expect(instance!.status).toBe('active');
    const servers = runtime.simulator.state().droplets.filter((droplet) => droplet.tags.includes(upstreamTagOf(runtime.deps, target!)));
    expect(servers.map((server) => server.id)).toEqual([instance!.upstream_id]);
    expect((await getJob(runtime.deps, jobId!))!.status).toBe('succeeded');
  });
});

describe('requests while DynamoDB is unreachable', () => {
  it('answer 503 Service unavailable with Retry-After, never 500, and a keyed create then gets its real result', async () => {
    const { apiKey } = await runtime.newAccount();
    const headers = { 'idempotency-key': 'outage-create-1' };
    const body = { project_name: 'during-outage', flavor: 's-1vcpu-2gb' };

    const { over } = await proxy.outage(OUTAGE_MS);
    const [read, create] = await Promise.all([
      runtime.call('GET', '/api/v1/instances', { apiKey }),
      runtime.call('POST', '/api/v1/instances', { apiKey, body, headers }),
    ]);
    await over;
    let retried = await runtime.call('POST', '/api/v1/instances', { apiKey, body, headers });
    for (let attempt = 0; retried.status === 409 && attempt < 50; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      retried = await runtime.call('POST', '/api/v1/instances', { apiKey, body, headers });
    }
    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey });

    for (const answer of [read, create]) {
      expect([answer.status, answer.body.error]).toEqual([503, 'Service unavailable']);
      expect(answer.headers.get('retry-after')).toBe('2');
    }
    expect(retried.status).toBe(202);
    expect(listed.body.map((instance: { instance_id: number }) => instance.instance_id)).toEqual([retried.body.instance_id]);
  });
});
