import * as z from './zod';

/** Every kind of event the service publishes; webhooks subscribe to a subset (stored with the webhook). */
const eventTypes = [
  'instance.created',
  'instance.status_changed',
  'instance.updated',
  'instance.deleted',
  'job.succeeded',
  'job.failed',
  'webhook.disabled',
  'account.balance_low',
  'account.billing_paused',
  'account.billing_resumed',
  'account.auto_recharge_disabled',
] as const;
export const eventTypeSchema = z.enum(eventTypes);

/** How one delivery attempt ended: a 2xx answer, or anything else. */
const deliveryStatuses = ['succeeded', 'failed'] as const;
export const deliveryStatusSchema = z.enum(deliveryStatuses);
