import { createHash } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from 'zod';
import { planSchema } from '../schemas/instances';
import { instanceStatusSchema } from '../model/instance-status';
import { jobStatusSchema, jobTypeSchema } from '../model/job-states';
import type { ServiceEvent } from '../schemas/events';

/** The tables whose change streams events are derived from. */
export type EventSourceTable = 'instances' | 'jobs' | 'webhooks';

const attributeMap = z.record(
  z.string(),
  z.custom<AttributeValue>((value) => typeof value === 'object' && value !== null && !Array.isArray(value)),
);

/** One change-stream record, as DynamoDB Streams delivers it (the Lambda event and the Streams API agree). */
export const changeRecordSchema = z.looseObject({
  eventName: z.string().optional(),
  dynamodb: z.looseObject({ NewImage: attributeMap.optional(), OldImage: attributeMap.optional() }).optional(),
});
export type ChangeRecord = z.output<typeof changeRecordSchema>;

// Only the attributes events are made of; each image is read leniently so that new attributes never break it.
const instanceImage = z.object({
  instance_id: z.number().int(),
  account_id: z.string(),
  status: instanceStatusSchema,
  plan: planSchema,
  deleted_at: z.string().nullable().optional(),
  created_at: z.string().nullable(),
  updated_at: z.string().optional(),
  version: z.number().int(),
});
const jobImage = z.object({
  job_id: z.string(),
  account_id: z.string(),
  instance_id: z.number().int(),
  type: jobTypeSchema,
  status: jobStatusSchema,
  finished_at: z.string().nullable(),
  error: z.string().nullable(),
});
const webhookImage = z.object({
  webhook_id: z.string(),
  account_id: z.string(),
  url: z.string(),
  disabled_at: z.string().nullable(),
  disabled_reason: z.string().nullable().optional(),
});

/** The same change always gets the same id, however often its record is read or its event republished. */
export function eventId(...parts: (string | number)[]): string {
  return `evt_${createHash('sha256').update(parts.join(':')).digest('hex').slice(0, 32)}`;
}

function images<T extends z.ZodType>(record: ChangeRecord, schema: T): { before?: z.output<T>; after?: z.output<T> } {
  const read = (image: Record<string, AttributeValue> | undefined) => (image ? schema.parse(unmarshall(image)) : undefined);
  return { before: read(record.dynamodb?.OldImage), after: read(record.dynamodb?.NewImage) };
}

function instanceEvents(record: ChangeRecord): ServiceEvent[] {
  const { before, after } = images(record, instanceImage);
  if (!after) return [];
  const base = {
    time: after.updated_at ?? after.created_at ?? '',
    account_id: after.account_id,
    instance_id: after.instance_id,
    sequence: after.version,
  };
  const id = (type: string) => eventId('instance', after.instance_id, after.version, type);
  const events: ServiceEvent[] = [];
  if (!before) {
    events.push({ ...base, id: id('instance.created'), type: 'instance.created', data: { status: after.status, plan: after.plan } });
    return events;
  }
  if (before.status !== after.status) {
    events.push({
      ...base,
      id: id('instance.status_changed'),
      type: 'instance.status_changed',
      data: { from: before.status, to: after.status, plan: after.plan },
    });
  }
  if (!before.deleted_at && after.deleted_at) {
    events.push({ ...base, id: id('instance.deleted'), type: 'instance.deleted', data: { status: after.status, plan: after.plan } });
  }
  return events;
}

function jobEvents(record: ChangeRecord): ServiceEvent[] {
  const { before, after } = images(record, jobImage);
  if (!after || after.status === 'running' || before?.status === after.status) return [];
  const type = after.status === 'succeeded' ? 'job.succeeded' : 'job.failed';
  return [
    {
      id: eventId('job', after.job_id, after.status),
      type,
      time: after.finished_at ?? '',
      account_id: after.account_id,
      instance_id: after.instance_id,
      sequence: null,
      data: { job_id: after.job_id, job_type: after.type, error: after.error },
    },
  ];
}

function webhookEvents(record: ChangeRecord): ServiceEvent[] {
  const { before, after } = images(record, webhookImage);
  if (!after?.disabled_at || before?.disabled_at) return [];
  return [
    {
      id: eventId('webhook', after.webhook_id, 'disabled', after.disabled_at),
      type: 'webhook.disabled',
      time: after.disabled_at,
      account_id: after.account_id,
      instance_id: null,
      sequence: null,
      data: { webhook_id: after.webhook_id, url: after.url, reason: after.disabled_reason ?? '' },
    },
  ];
}

const deriveByTable: Record<EventSourceTable, (record: ChangeRecord) => ServiceEvent[]> = {
  instances: instanceEvents,
  jobs: jobEvents,
  webhooks: webhookEvents,
};

/**
 * The events one committed change stands for: none, one or (a delete is a status change too) two. Pure, so that
 * the stream function on AWS and the local stream poller publish exactly the same events.
 */
export function eventsFromChange(table: EventSourceTable, record: ChangeRecord): ServiceEvent[] {
  if (record.eventName === 'REMOVE') return [];
  return deriveByTable[table](record);
}
