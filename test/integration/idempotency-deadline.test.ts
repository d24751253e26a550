import { inject } from 'vitest';
import { upstreamTagOf } from '../../shared/domain/instances';
import { routes } from '../../shared/routes';
import { startStallingProxy, type StallingProxy } from '../support/stalling-proxy';
import { startTestRuntime, type CallResult, type TestRuntime } from '../support/runtime';

/** CreateInstance's budget, cut short so that a commit held back by the store outlasts it. */
const BUDGET_SECONDS = 2;
const STALL_MS = 4_000;

let proxy: StallingProxy;
let runtime: TestRuntime;

beforeAll(async () => {
  proxy = await startStallingProxy(inject('dynamodbEndpoint'));
  runtime = await startTestRuntime({
    dynamodbEndpoint: proxy.endpoint,
    routes: routes.map((route) => (route.name === 'CreateInstance' ? { ...route, timeoutSeconds: BUDGET_SECONDS } : route)),
  });
});

afterAll(async () => {
  await runtime.stepFunctions.idle();
  await runtime.stop();
  await proxy.close();
});

/** A create of its own project under its own Idempotency-Key, to send as often as a test needs. */
const keyedCreate = (apiKey: string, name: string) => () =>
  runtime.call('POST', '/api/v1/instances', {
    apiKey,
    body: { project_name: name, flavor: 's-1vcpu-2gb' },
    headers: { 'idempotency-key': `${name}-1` },
  });
const deployRemaining = (answer: CallResult) => Number(/"deploy";r=(\d+)/.exec(answer.headers.get('ratelimit') ?? '')?.[1]);

// First in the file: the process reads the instance id sequence (a block at a time) on its first create only.
describe('a keyed create stopped by its budget before it commits', () => {
  it('answers 504, gives its key and its deploy unit back, and the retry deploys once', async () => {
    const { apiKey } = await runtime.newAccount();
    const create = keyedCreate(apiKey, 'stopped');
    const sequenceRead = proxy.stallNext('UpdateItem', STALL_MS, 'seq#instance_id');

    const first = await create();
    await sequenceRead;
    let retried: CallResult;
    for (let attempt = 0; (retried = await create()).status === 409 && attempt < 40; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const list = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect([first.status, first.body.error]).toEqual([504, 'Outcome unknown']);
    expect(deployRemaining(first)).toBe(4);
    expect(retried.status).toBe(202);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(deployRemaining(retried)).toBe(4);
    expect(list.body.map((instance: { instance_id: number }) => instance.instance_id)).toEqual([retried.body.instance_id]);
  });
});

describe('a create without a key that outlives its budget', () => {
  it('answers 503 Service unavailable with Retry-After: no key to retry with, and the outcome is not known', async () => {
    const { apiKey } = await runtime.newAccount();
    // This create's own commit, not a write of a lifecycle still running from the test before.
    const committed = proxy.stallNext('TransactWriteItems', STALL_MS, 'unkeyed');

    const answer = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'unkeyed', flavor: 's-1vcpu-2gb' } });
    await committed;
    // Here the held commit did land: the instance exists and provisions like any other.
    await vi.waitUntil(async () => (await runtime.call('GET', '/api/v1/instances', { apiKey })).body.length === 1, { timeout: 10_000 });
    const [instance] = (await runtime.call('GET', '/api/v1/instances', { apiKey })).body;
    await runtime.waitForStatus(apiKey, instance.instance_id, ['active']);
    await runtime.stepFunctions.idle();

    expect([answer.status, answer.body.error]).toEqual([503, 'Service unavailable']);
    expect(answer.headers.get('retry-after')).toBe('2');
  });
});

describe('a keyed create that outlives its budget', () => {
  it('answers 504 Outcome unknown, keeps the key claimed until its commit lands, then replays it: one server', async () => {
    const { apiKey } = await runtime.newAccount();
    const create = keyedCreate(apiKey, 'stalled');
    await runtime.stepFunctions.idle();
    const committed = proxy.stallNext('TransactWriteItems', STALL_MS, 'stalled');
    const createsBefore = runtime.simulator.state().calls['POST /v2/droplets'] ?? 0;

    const first = await create();
    const whileCommitting = await create();
    await committed;
    let replay: CallResult;
    for (let attempt = 0; (replay = await create()).status === 409 && attempt < 40; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const again = await create();
    const list = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(first.status).toBe(504);
    expect(first.headers.get('retry-after')).toBe('2');
    expect(first.body).toEqual({
      error: 'Outcome unknown',
      message: 'The request ran out of time but may still complete: retry it with the same Idempotency-Key to get its result',
      request_id: expect.any(String),
    });
    expect(whileCommitting.status).toBe(409);
    expect(whileCommitting.body.message).toBe('A request with this Idempotency-Key is still in progress');
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toMatchObject({ status: 'pending', root_password: expect.any(String) });
    expect(again.body).toEqual(replay.body);
    expect(list.body.map((instance: { instance_id: number }) => instance.instance_id)).toEqual([replay.body.instance_id]);
    await runtime.waitForStatus(apiKey, replay.body.instance_id, ['active']);
    await runtime.stepFunctions.idle();
    expect(
      runtime.simulator.state().droplets.filter((droplet) => droplet.tags.includes(upstreamTagOf(runtime.deps, replay.body.instance_id))),
    ).toHaveLength(1);
    expect((runtime.simulator.state().calls['POST /v2/droplets'] ?? 0) - createsBefore).toBe(1);
  });
});
