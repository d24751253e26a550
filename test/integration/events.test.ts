import type { ServiceEvent } from '../../shared/schemas/events';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

/** Everything the bus carries from now on, for one instance. */
function collect(): { of(instanceId: number): ServiceEvent[]; stop(): void } {
  const seen: ServiceEvent[] = [];
  const stop = runtime.events.subscribe((event) => void seen.push(event));
  return { of: (instanceId) => seen.filter((event) => event.instance_id === instanceId), stop };
}

async function eventually<T>(read: () => T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const summary = (event: ServiceEvent) =>
  event.type === 'instance.status_changed' ? `${event.type} ${event.data.from}→${event.data.to}` : event.type === 'job.succeeded' || event.type === 'job.failed' ? `${event.type} ${event.data.job_type}` : event.type;

describe('events from the change streams', () => {
  it('publishes a whole walk-through (create, power cycle, resize, delete) as exactly the expected events', async () => {
    const bus = collect();
    const { apiKey, accountId } = await runtime.newAccount();

    const active = await runtime.activeInstance(apiKey);
    const id = active.instance_id as number;
    for (const body of [{ type: 'power_off' }, { type: 'power_on' }, { type: 'resize', flavor: 's-2vcpu-4gb' }]) {
      const action = await runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });
      expect((await runtime.waitForJob(apiKey, action.body.job_id)).status).toBe('succeeded');
    }
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${id}`, { apiKey });
    await runtime.waitForJob(apiKey, deleted.body.job_id);
    await eventually(() => (bus.of(id).some((event) => event.type === 'job.succeeded' && event.data.job_type === 'delete') ? true : undefined), 'the delete to end');
    bus.stop();

    const events = bus.of(id);
    const instanceEvents = events.filter((event) => event.type.startsWith('instance.'));
    expect(instanceEvents.map(summary)).toEqual([
      'instance.created',
      'instance.status_changed pending→provisioning',
      'instance.status_changed provisioning→active',
      'instance.status_changed active→stopped',
      'instance.status_changed stopped→active',
      'instance.status_changed active→resizing',
      'instance.status_changed resizing→active',
      'instance.status_changed active→deleting',
      'instance.deleted',
      'instance.status_changed deleting→destroyed',
    ]);
    expect(events.filter((event) => event.type.startsWith('job.')).map(summary)).toEqual([
      'job.succeeded provision',
      'job.succeeded power_off',
      'job.succeeded power_on',
      'job.succeeded resize',
      'job.succeeded delete',
    ]);
    const sequences = instanceEvents.map((event) => event.sequence!);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(events.map((event) => event.id)).size).toBe(events.length);
    expect(events.every((event) => event.account_id === accountId)).toBe(true);
    const resized = instanceEvents.find((event) => event.type === 'instance.status_changed' && event.data.from === 'resizing');
    expect(resized?.type === 'instance.status_changed' && resized.data.plan.flavor).toBe('s-2vcpu-4gb');
  });
});
