import * as z from '../model/zod';
import { instanceStatusSchema, planSchema } from './instances';
import { jobTypes } from './jobs';
import { timestampSchema } from './timestamps';
import { failureView } from './failure';
import { eventTypeSchema } from '../model/webhook-events';

export { eventTypeSchema };

/** Sent only by POST /api/v1/webhooks/{id}/test, to that endpoint alone. */
export const TEST_EVENT_TYPE = 'webhook.test';

const envelope = {
  id: z.string().meta({ description: 'Stable across retries and republishing: the same change always has the same id.' }),
  time: timestampSchema.meta({ description: 'When the change was committed.' }),
  account_id: z.string(),
  instance_id: z.number().int().nullable(),
  sequence: z.number().int().nullable().meta({
    description:
      "Per instance, increasing with every committed change of the instance (gaps allowed): order an instance's events by it. Null on events that are not about an instance's state (jobs, webhooks).",
  }),
};

const jobData = z.strictObject({ job_id: z.string(), job_type: z.enum(jobTypes), error: z.string().nullable(), failure: failureView });

export const serviceEventSchema = z.discriminatedUnion('type', [
  z.strictObject({
    ...envelope,
    type: z.literal('instance.created'),
    data: z.strictObject({ status: instanceStatusSchema, plan: planSchema }),
  }),
  z.strictObject({
    ...envelope,
    type: z.literal('instance.status_changed'),
    data: z.strictObject({ from: instanceStatusSchema, to: instanceStatusSchema, plan: planSchema, failure: failureView }),
  }),
  z.strictObject({
    ...envelope,
    type: z.literal('instance.updated'),
    data: z.strictObject({ project_name: z.string(), labels: z.record(z.string(), z.string()) }),
  }),
  z.strictObject({
    ...envelope,
    type: z.literal('instance.deleted'),
    data: z.strictObject({ status: instanceStatusSchema, plan: planSchema }),
  }),
  z.strictObject({ ...envelope, type: z.literal('job.succeeded'), data: jobData }),
  z.strictObject({ ...envelope, type: z.literal('job.failed'), data: jobData }),
  z.strictObject({
    ...envelope,
    type: z.literal('webhook.disabled'),
    data: z.strictObject({ webhook_id: z.string(), url: z.string(), reason: z.string() }),
  }),
  z.strictObject({
    ...envelope,
    type: z.literal('account.balance_low'),
    data: z.strictObject({
      level: z
        .enum(['below_24h', 'below_1h'])
        .meta({ description: 'The runway at the current burn rate fell under 24 hours, or under 1 hour.' }),
      balance_usd: z.string(),
    }),
  }),
  z.strictObject({ ...envelope, type: z.literal('account.billing_paused'), data: z.strictObject({ balance_usd: z.string() }) }),
  z.strictObject({ ...envelope, type: z.literal('account.billing_resumed'), data: z.strictObject({ balance_usd: z.string() }) }),
  z.strictObject({ ...envelope, type: z.literal('account.auto_recharge_disabled'), data: z.strictObject({ reason: z.string() }) }),
  z.strictObject({ ...envelope, type: z.literal(TEST_EVENT_TYPE), data: z.strictObject({ webhook_id: z.string() }) }),
]);
export type ServiceEvent = z.infer<typeof serviceEventSchema>;
