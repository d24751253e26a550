import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureSecretsKeyFile } from '../../infra/local/secrets-key';
import { quarantineInstance } from '../../shared/domain/lifecycle';
import { eventually, startReceiver, type Receiver } from '../support/receiver';
import { startTestRuntime, type TestRuntime } from '../support/runtime';

// The handlers read their configuration once per process, so every start in this file shares the tables, the secrets
// key and the retry waits (the first retry a second after the first attempt).
const tablePrefix = `t${randomBytes(5).toString('hex')}`;
const env = { WEBHOOK_RETRY_BASE_MS: '1000', WEBHOOK_RETRY_MAX_DELAY_MS: '1000' };
let keyDir: string;
let secretsKeyFile: string;
beforeAll(async () => {
  keyDir = await mkdtemp(join(tmpdir(), 'vps-restart-key-'));
  secretsKeyFile = ensureSecretsKeyFile(join(keyDir, 'secrets.key'));
});
afterAll(async () => {
  await rm(keyDir, { recursive: true, force: true });
});

let dataDir: string;
let receiver: Receiver;
let service: TestRuntime | undefined;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'vps-restart-'));
  receiver = await startReceiver();
});
afterEach(async () => {
  await stop();
  await receiver.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** The service on the test's data directory, as `npm start -- --data-dir DIR` runs it. */
async function start(): Promise<TestRuntime> {
  service = await startTestRuntime({ tablePrefix, secretsKeyFile, dataDir, env });
  return service;
}

async function stop(): Promise<void> {
  await service?.stepFunctions.idle();
  await service?.stop();
  service = undefined;
}

async function register(runtime: TestRuntime, apiKey: string, events: string[]): Promise<{ id: string }> {
  const created = await runtime.call('POST', '/api/v1/webhooks', { apiKey, body: { url: receiver.url, events } });
  expect(created.status).toBe(201);
  receiver.secret = created.body.secret;
  return created.body;
}

describe('a restart of the local service on the same data directory', () => {
  it('delivers a change committed while the service was stopped, and nothing it had already delivered', async () => {
    const first = await start();
    const { apiKey } = await first.newAccount();
    await register(first, apiKey, ['instance.status_changed']);
    const { instance_id: id } = await first.activeInstance(apiKey);
    await eventually(() => receiver.received.some((delivery) => delivery.event.data.to === 'active'), 'the active event');
    await stop();

    // An operator quarantines the server (the operations CLI writes to DynamoDB itself) while the service is down.
    await quarantineInstance(first.deps, id);
    await start();
    await eventually(() => receiver.received.some((delivery) => delivery.event.data.to === 'quarantined'), 'the quarantine event', 10_000);
    // A stream read again from its start would have handed the earlier changes on with it.
    await new Promise((resolve) => setTimeout(resolve, 500));

    const transitions = receiver.received
      .map((delivery) => delivery.event)
      .sort((a, b) => a.sequence - b.sequence)
      .map((event) => `${event.data.from}→${event.data.to}`);
    expect(transitions).toEqual(['pending→provisioning', 'provisioning→active', 'active→quarantined']);
    expect(receiver.received.every((delivery) => delivery.verified && delivery.event.instance_id === id)).toBe(true);
  });

  it('delivers a retry that was pending when the service stopped, once it starts again', async () => {
    const first = await start();
    const { apiKey } = await first.newAccount();
    const webhook = await register(first, apiKey, ['job.failed']);
    receiver.answer = (n) => (n === 1 ? 500 : 204);

    const test = await first.call('POST', `/api/v1/webhooks/${webhook.id}/test`, { apiKey });
    expect(test.status).toBe(202);
    await eventually(() => receiver.received.length === 1, 'the first attempt');
    await stop();
    // The retry falls due while the service is down: the next start delivers it at once.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const second = await start();
    await eventually(() => receiver.received.length === 2, 'the retry', 5_000);

    expect(receiver.received.map((delivery) => [delivery.headers['webhook-id'], delivery.answered, delivery.verified])).toEqual([
      [test.body.event_id, 500, true],
      [test.body.event_id, 204, true],
    ]);
    const attempts = await eventually(async () => {
      const answer = await second.call('GET', `/api/v1/webhooks/${webhook.id}/deliveries`, { apiKey });
      return answer.body.length >= 2 && answer.body;
    }, 'two recorded attempts');
    expect(attempts.map((a: { attempt: number; status: string }) => [a.attempt, a.status])).toEqual([
      [2, 'succeeded'],
      [1, 'failed'],
    ]);
  });
});
