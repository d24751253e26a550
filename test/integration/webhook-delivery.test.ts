import { startReceiver, eventually, type Receiver } from '../support/receiver';
import { useTestRuntime } from '../support/runtime';

// Retries come quickly here: 50 ms, doubling up to 200 ms.
const runtime = useTestRuntime({ env: { WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_RETRY_MAX_DELAY_MS: '200' } });

let receiver: Receiver;
beforeEach(async () => {
  receiver = await startReceiver();
});
afterEach(async () => {
  await receiver.close();
});

async function register(apiKey: string, events: string[]) {
  const created = await runtime.call('POST', '/api/v1/webhooks', { apiKey, body: { url: receiver.url, events } });
  expect(created.status).toBe(201);
  receiver.secret = created.body.secret;
  return created.body as { id: string; secret: string };
}

const transition = (event: { type: string; data: { from?: string; to?: string } }) =>
  event.type === 'instance.status_changed' ? `${event.data.from}→${event.data.to}` : event.type;

describe('webhook delivery', () => {
  it('sends signed instance events pending → provisioning → active to the receiver without any polling', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const webhook = await register(apiKey, ['instance.created', 'instance.status_changed']);

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'hooked', flavor: 's-1vcpu-2gb' } });
    await eventually(() => receiver.received.some((d) => d.event.data.to === 'active'), 'the active event');

    const events = receiver.received.map((delivery) => delivery.event).sort((a, b) => a.sequence - b.sequence);
    expect(events.map(transition)).toEqual(['instance.created', 'pending→provisioning', 'provisioning→active']);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    for (const delivery of receiver.received) {
      expect(delivery.headers['webhook-id']).toBe(delivery.event.id);
      expect(delivery.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(delivery.headers['content-type']).toBe('application/json');
      expect(delivery.event).toMatchObject({ account_id: accountId, instance_id: created.body.instance_id });
    }
    expect(events[2]).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'instance.status_changed',
      time: expect.any(String),
      account_id: accountId,
      instance_id: created.body.instance_id,
      sequence: expect.any(Number),
      data: { from: 'provisioning', to: 'active', plan: created.body.plan },
    });
    const attempts = await eventually(async () => {
      const answer = await runtime.call('GET', `/api/v1/webhooks/${webhook.id}/deliveries`, { apiKey });
      return answer.body.length >= 3 && answer;
    }, 'three recorded attempts');
    expect(
      attempts.body.map((a: { status: string; response_code: number; attempt: number }) => [a.status, a.response_code, a.attempt]),
    ).toEqual([
      ['succeeded', 204, 1],
      ['succeeded', 204, 1],
      ['succeeded', 204, 1],
    ]);
  });

  it('retries after 500s with the same id and signature scheme, then succeeds, and lists every attempt', async () => {
    const { apiKey } = await runtime.newAccount();
    const webhook = await register(apiKey, ['job.failed']);
    receiver.answer = (n) => (n <= 3 ? 500 : 200);

    const test = await runtime.call('POST', `/api/v1/webhooks/${webhook.id}/test`, { apiKey });
    const listed = await eventually(async () => {
      const answer = await runtime.call('GET', `/api/v1/webhooks/${webhook.id}/deliveries`, { apiKey });
      return answer.body.length >= 4 && answer;
    }, 'four recorded attempts');

    expect([test.status, test.body]).toEqual([202, { ok: true, event_id: expect.stringMatching(/^evt_/) }]);
    expect(receiver.received.map((delivery) => delivery.answered)).toEqual([500, 500, 500, 200]);
    expect(new Set(receiver.received.map((delivery) => delivery.headers['webhook-id']))).toEqual(new Set([test.body.event_id]));
    expect(receiver.received.every((delivery) => delivery.verified && delivery.event.type === 'webhook.test')).toBe(true);
    expect(
      listed.body.map((a: { attempt: number; status: string; response_code: number; error: string | null }) => [
        a.attempt,
        a.status,
        a.response_code,
        a.error,
      ]),
    ).toEqual([
      [4, 'succeeded', 200, null],
      [3, 'failed', 500, 'the receiver answered 500'],
      [2, 'failed', 500, 'the receiver answered 500'],
      [1, 'failed', 500, 'the receiver answered 500'],
    ]);
    expect((await runtime.call('GET', '/api/v1/webhooks', { apiKey })).body[0].enabled).toBe(true);
  });

  it('delivers a whole walk-through (create, power cycle, resize, delete) as exactly the expected transitions, ordered and deduplicated by sequence', async () => {
    const { apiKey } = await runtime.newAccount();
    await register(apiKey, ['instance.status_changed', 'instance.deleted']);

    const active = await runtime.activeInstance(apiKey);
    const id = active.instance_id as number;
    for (const body of [{ type: 'power_off' }, { type: 'power_on' }, { type: 'resize', flavor: 's-2vcpu-4gb' }]) {
      const action = await runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });
      await runtime.waitForJob(apiKey, action.body.job_id);
    }
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${id}`, { apiKey });
    await runtime.waitForJob(apiKey, deleted.body.job_id);
    await eventually(() => receiver.received.some((d) => d.event.data.to === 'destroyed'), 'the destroyed event');
    // The stream hands the same changes on again (at least once): consumers see the same ids and sequences.
    const firstRound = receiver.received.map((delivery) => delivery.event);
    await runtime.events.publish(firstRound);
    await eventually(() => receiver.received.length === 2 * firstRound.length, 'the repeated deliveries');

    const seen = new Set<string>();
    // A delete's status change and instance.deleted come from one write and share a sequence: ties by type.
    const consumed = [...receiver.received]
      .sort((a, b) => a.event.sequence - b.event.sequence || a.event.type.localeCompare(b.event.type))
      .filter((delivery) => !seen.has(delivery.headers['webhook-id'] as string) && seen.add(delivery.headers['webhook-id'] as string));
    expect(consumed.map((delivery) => transition(delivery.event))).toEqual([
      'pending→provisioning',
      'provisioning→active',
      'active→stopped',
      'stopped→active',
      'active→resizing',
      'resizing→active',
      'instance.deleted',
      'active→deleting',
      'deleting→destroyed',
    ]);
    const sequences = consumed.map((delivery) => delivery.event.sequence as number);
    expect(new Set(sequences.filter((_, i) => consumed[i]!.event.type === 'instance.status_changed')).size).toBe(8);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
  });
});
