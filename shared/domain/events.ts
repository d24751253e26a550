import { balanceAt, burningSegmentSchema } from '../model/burn';
import { createHash } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from '../model/zod';
import { planSchema } from '../schemas/instances';
import { instanceStatusSchema } from '../model/instance-status';
import { jobStatusSchema, jobTypeSchema } from '../model/job-states';
import type { ServiceEvent } from '../schemas/events';
import { microsToUsd } from '../model/money';
import { failureSchema, type FailureReason } from '../model/failure';

/** The tables whose change streams events are derived from. */
export type EventSourceTable = 'instances' | 'jobs' | 'webhooks' | 'accounts';

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
  failure: failureSchema.nullable().optional(),
  project_name: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
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
  failure: failureSchema.nullable().optional(),
});
const webhookImage = z.object({
  webhook_id: z.string(),
  account_id: z.string(),
  url: z.string(),
  disabled_at: z.string().nullable(),
  disabled_reason: z.string().nullable().optional(),
});

const accountImage = z.object({
  account_id: z.string(),
  balance: z.number().int(),
  burning: z.record(z.string(), burningSegmentSchema).default({}),
  billing_paused: z.boolean(),
  billing_paused_at: z.string().nullable().optional(),
  balance_notice: z.enum(['none', 'below_24h', 'below_1h']).optional(),
  balance_notice_at: z.string().nullable().optional(),
  auto_recharge: z
    .object({ enabled: z.boolean(), disabled_reason: z.string().nullable().optional(), disabled_at: z.string().nullable().optional() })
    .nullable()
    .optional(),
});

/** The reason a failed instance or job carries, as events show it: only when it failed and kept one. */
function failureOf(image: { readonly status: string; readonly failure?: FailureReason | null | undefined }): { failure?: FailureReason } {
  return image.status === 'failed' && image.failure ? { failure: image.failure } : {};
}

const sortedLabels = (labels: Record<string, string> | undefined) => Object.entries(labels ?? {}).sort(([a], [b]) => a.localeCompare(b));

/** The same change always gets the same id, however often its record is read or its event republished. */
export function eventId(...parts: (string | number)[]): string {
  return `evt_${createHash('sha256').update(parts.join(':')).digest('hex').slice(0, 32)}`;
}

/** DynamoDB Local's stream gives an empty map as `{}`, with no type (DynamoDB's gives `{ M: {} }`). */
function withTypedEmptyMaps(value: AttributeValue): AttributeValue {
  if (Object.keys(value).length === 0) return { M: {} };
  if (value.M) return { M: typedMembers(value.M) };
  if (value.L) return { L: value.L.map(withTypedEmptyMaps) };
  return value;
}
const typedMembers = (map: Record<string, AttributeValue>) =>
  Object.fromEntries(Object.entries(map).map(([name, value]) => [name, withTypedEmptyMaps(value)]));

/** An image's attributes as plain values: an attribute that is no DynamoDB value fails the parse, never throws. */
const plainImage = attributeMap.transform((image, context) => {
  try {
    return unmarshall(typedMembers(image));
  } catch {
    context.addIssue({ code: 'custom', message: 'not a DynamoDB item' });
    return z.NEVER;
  }
});

function images<T extends z.ZodType>(record: ChangeRecord, schema: T): { before?: z.output<T>; after?: z.output<T> } {
  const read = (image: Record<string, AttributeValue> | undefined) => (image ? schema.parse(plainImage.parse(image)) : undefined);
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
      data: { from: before.status, to: after.status, plan: after.plan, ...failureOf(after) },
    });
  }
  const renamedOrRelabelled =
    before.project_name !== after.project_name ||
    JSON.stringify(sortedLabels(before.labels)) !== JSON.stringify(sortedLabels(after.labels));
  if (!after.deleted_at && renamedOrRelabelled && after.project_name !== undefined) {
    events.push({
      ...base,
      id: id('instance.updated'),
      type: 'instance.updated',
      data: { project_name: after.project_name, labels: after.labels ?? {} },
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
      data: { job_id: after.job_id, job_type: after.type, error: after.error, ...failureOf(after) },
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

/**
 * An account's own events: its billing paused or resumed, its runway under 24 hours or under 1 hour (each level once
 * per crossing: the level recorded on the account), and auto-recharge turned off after repeated failures.
 */
function accountEvents(record: ChangeRecord): ServiceEvent[] {
  const { before, after } = images(record, accountImage);
  if (!after || !before) return [];
  const base = { account_id: after.account_id, instance_id: null, sequence: null };
  const events: ServiceEvent[] = [];
  if (before.billing_paused !== after.billing_paused && after.billing_paused_at) {
    const type = after.billing_paused ? 'account.billing_paused' : 'account.billing_resumed';
    events.push({
      ...base,
      id: eventId('account', after.account_id, type, after.billing_paused_at),
      type,
      time: after.billing_paused_at,
      data: { balance_usd: microsToUsd(balanceAt(after, Date.parse(after.billing_paused_at))) },
    });
  }
  const rank = { none: 0, below_24h: 1, below_1h: 2 } as const;
  const level = after.balance_notice ?? 'none';
  if (level !== 'none' && rank[level] > rank[before.balance_notice ?? 'none'] && after.balance_notice_at) {
    events.push({
      ...base,
      id: eventId('account', after.account_id, 'account.balance_low', level, after.balance_notice_at),
      type: 'account.balance_low',
      time: after.balance_notice_at,
      data: { level, balance_usd: microsToUsd(balanceAt(after, Date.parse(after.balance_notice_at))) },
    });
  }
  const disabledAt = after.auto_recharge?.disabled_at;
  if (
    before.auto_recharge?.enabled &&
    after.auto_recharge &&
    !after.auto_recharge.enabled &&
    disabledAt &&
    after.auto_recharge.disabled_reason
  ) {
    events.push({
      ...base,
      id: eventId('account', after.account_id, 'account.auto_recharge_disabled', disabledAt),
      type: 'account.auto_recharge_disabled',
      time: disabledAt,
      data: { reason: after.auto_recharge.disabled_reason },
    });
  }
  return events;
}

const deriveByTable: Record<EventSourceTable, (record: ChangeRecord) => ServiceEvent[]> = {
  instances: instanceEvents,
  jobs: jobEvents,
  webhooks: webhookEvents,
  accounts: accountEvents,
};

/**
 * The events one committed change stands for: none, one or (a delete is a status change too) two. Pure, so that
 * the stream function on AWS and the local stream poller publish exactly the same events.
 */
export function eventsFromChange(table: EventSourceTable, record: ChangeRecord): ServiceEvent[] {
  if (record.eventName === 'REMOVE') return [];
  return deriveByTable[table](record);
}
