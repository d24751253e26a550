import { marshall } from '@aws-sdk/util-dynamodb';
import { eventsFromChange, type ChangeRecord } from '../../shared/domain/events';

const plan = { flavor: 's-1vcpu-2gb', vcpu: 1, ram_mb: 2048, disk_gb: 50, hourly_price: 0.01786 };
const biggerPlan = { flavor: 's-2vcpu-4gb', vcpu: 2, ram_mb: 4096, disk_gb: 80, hourly_price: 0.03571 };

function instance(status: string, version: number, extra: Record<string, unknown> = {}) {
  return {
    instance_id: 7,
    account_id: 'acct_a',
    status,
    plan,
    deleted_at: null,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: `2026-01-01T00:00:0${version}.000Z`,
    version,
    root_password: 'never-in-an-event',
    ...extra,
  };
}

function job(status: string, extra: Record<string, unknown> = {}) {
  return {
    job_id: '11111111-2222-4333-8444-555555555555',
    account_id: 'acct_a',
    instance_id: 7,
    type: 'power_off',
    status,
    started_at: '2026-01-01T00:00:00.000Z',
    finished_at: status === 'running' ? null : '2026-01-01T00:01:00.000Z',
    error: status === 'failed' ? 'Upstream error' : null,
    ...extra,
  };
}

function record(eventName: string, before?: object, after?: object): ChangeRecord {
  return {
    eventName,
    dynamodb: {
      ...(before ? { OldImage: marshall(before, { removeUndefinedValues: true }) } : {}),
      ...(after ? { NewImage: marshall(after, { removeUndefinedValues: true }) } : {}),
    },
  };
}

const envelope = { account_id: 'acct_a', instance_id: 7 };

describe('eventsFromChange', () => {
  it.each([
    {
      change: 'an insert',
      record: record('INSERT', undefined, instance('pending', 1)),
      expected: [
        { ...envelope, type: 'instance.created', sequence: 1, time: '2026-01-01T00:00:01.000Z', data: { status: 'pending', plan } },
      ],
    },
    {
      change: 'pending → provisioning',
      record: record('MODIFY', instance('pending', 1), instance('provisioning', 2)),
      expected: [
        {
          ...envelope,
          type: 'instance.status_changed',
          sequence: 2,
          time: '2026-01-01T00:00:02.000Z',
          data: { from: 'pending', to: 'provisioning', plan },
        },
      ],
    },
    {
      change: 'resizing → active on the new plan',
      record: record('MODIFY', instance('resizing', 5), instance('active', 6, { plan: biggerPlan })),
      expected: [
        {
          ...envelope,
          type: 'instance.status_changed',
          sequence: 6,
          time: '2026-01-01T00:00:06.000Z',
          data: { from: 'resizing', to: 'active', plan: biggerPlan },
        },
      ],
    },
    {
      change: 'a delete (status and deletion in one write)',
      record: record('MODIFY', instance('active', 3), instance('deleting', 4, { deleted_at: '2026-01-01T00:00:04.000Z' })),
      expected: [
        {
          ...envelope,
          type: 'instance.status_changed',
          sequence: 4,
          time: '2026-01-01T00:00:04.000Z',
          data: { from: 'active', to: 'deleting', plan },
        },
        { ...envelope, type: 'instance.deleted', sequence: 4, time: '2026-01-01T00:00:04.000Z', data: { status: 'deleting', plan } },
      ],
    },
    {
      change: 'provisioning → failed, with its reason',
      record: record(
        'MODIFY',
        instance('provisioning', 2),
        instance('failed', 3, { failure: { code: 'ssh_timeout', message: 'The server started but SSH did not answer in time' } }),
      ),
      expected: [
        {
          ...envelope,
          type: 'instance.status_changed',
          sequence: 3,
          time: '2026-01-01T00:00:03.000Z',
          data: {
            from: 'provisioning',
            to: 'failed',
            plan,
            failure: { code: 'ssh_timeout', message: 'The server started but SSH did not answer in time' },
          },
        },
      ],
    },
    {
      change: 'a change that keeps the status',
      record: record('MODIFY', instance('active', 3), instance('active', 4, { metered_until: 'x' })),
      expected: [],
    },
    { change: 'a removed instance item', record: record('REMOVE', instance('destroyed', 9), undefined), expected: [] },
  ])('derives the instance events of $change', ({ record: change, expected }) => {
    const events = eventsFromChange('instances', change);

    expect(events.map(({ id: _id, ...event }) => event)).toEqual(expected);
    for (const event of events) expect(event.id).toMatch(/^evt_[0-9a-f]{32}$/);
  });

  it.each([
    { change: 'a new running job', record: record('INSERT', undefined, job('running')), expected: [] },
    {
      change: 'running → succeeded',
      record: record('MODIFY', job('running'), job('succeeded')),
      expected: [
        {
          ...envelope,
          type: 'job.succeeded',
          sequence: null,
          time: '2026-01-01T00:01:00.000Z',
          data: { job_id: '11111111-2222-4333-8444-555555555555', job_type: 'power_off', error: null },
        },
      ],
    },
    {
      change: 'running → failed',
      record: record('MODIFY', job('running'), job('failed')),
      expected: [
        {
          ...envelope,
          type: 'job.failed',
          sequence: null,
          time: '2026-01-01T00:01:00.000Z',
          data: { job_id: '11111111-2222-4333-8444-555555555555', job_type: 'power_off', error: 'Upstream error' },
        },
      ],
    },
    {
      change: 'running → failed with its reason',
      record: record('MODIFY', job('running'), job('failed', { failure: { code: 'upstream_error', message: 'Upstream error' } })),
      expected: [
        {
          ...envelope,
          type: 'job.failed',
          sequence: null,
          time: '2026-01-01T00:01:00.000Z',
          data: {
            job_id: '11111111-2222-4333-8444-555555555555',
            job_type: 'power_off',
            error: 'Upstream error',
            failure: { code: 'upstream_error', message: 'Upstream error' },
          },
        },
      ],
    },
    { change: 'an ended job written again', record: record('MODIFY', job('failed'), job('failed')), expected: [] },
  ])('derives the job events of $change', ({ record: change, expected }) => {
    expect(eventsFromChange('jobs', change).map(({ id: _id, ...event }) => event)).toEqual(expected);
  });

  it('derives webhook.disabled once, when an endpoint is disabled', () => {
    const endpoint = { webhook_id: 'wh_1', account_id: 'acct_a', url: 'https://example.com/hook', disabled_at: null, secret_sealed: 'x' };
    const disabled = { ...endpoint, disabled_at: '2026-01-04T00:00:00.000Z', disabled_reason: 'Failing for 3 days' };

    const events = eventsFromChange('webhooks', record('MODIFY', endpoint, disabled));
    const again = eventsFromChange('webhooks', record('MODIFY', disabled, { ...disabled, failing_since: 'y' }));

    expect(events).toEqual([
      {
        id: expect.stringMatching(/^evt_/),
        type: 'webhook.disabled',
        time: '2026-01-04T00:00:00.000Z',
        account_id: 'acct_a',
        instance_id: null,
        sequence: null,
        data: { webhook_id: 'wh_1', url: 'https://example.com/hook', reason: 'Failing for 3 days' },
      },
    ]);
    expect(again).toEqual([]);
  });

  it('gives a change the same event id however often its record is read, and different changes different ids', () => {
    const change = record('MODIFY', instance('pending', 1), instance('provisioning', 2));
    const next = record('MODIFY', instance('provisioning', 2), instance('active', 3));

    expect(eventsFromChange('instances', change)[0]!.id).toBe(eventsFromChange('instances', change)[0]!.id);
    expect(eventsFromChange('instances', change)[0]!.id).not.toBe(eventsFromChange('instances', next)[0]!.id);
  });

  it('never carries the instance’s credentials', () => {
    const events = eventsFromChange('instances', record('INSERT', undefined, instance('pending', 1)));

    expect(JSON.stringify(events)).not.toContain('never-in-an-event');
  });
});
