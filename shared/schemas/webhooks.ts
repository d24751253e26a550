import * as z from '../model/zod';
import { eventTypeSchema } from './events';
import { timestampSchema } from './timestamps';
import { deliveryStatusSchema } from '../model/webhook-events';

const WEBHOOK_URL_MAX = 2_048;
export const WEBHOOKS_PER_ACCOUNT = 10;

export const createWebhookBodySchema = z.strictObject({
  url: z.string().max(WEBHOOK_URL_MAX).meta({ description: 'https:// URL of a public host; redirects are not followed.' }),
  events: z.array(eventTypeSchema).min(1).meta({ description: 'The event types to receive.' }),
});
export type CreateWebhookBody = z.infer<typeof createWebhookBodySchema>;

export const webhookSchema = z.strictObject({
  id: z.string(),
  url: z.string(),
  events: z.array(eventTypeSchema),
  enabled: z.boolean().meta({ description: 'False once the endpoint was disabled after failing for 3 days.' }),
  disabled_at: timestampSchema.nullable(),
  created_at: timestampSchema,
});
export type WebhookView = z.infer<typeof webhookSchema>;

export const createdWebhookSchema = webhookSchema.extend({
  secret: z.string().meta({ description: 'The signing secret (`whsec_…`), shown only in this response.' }),
});
export type CreatedWebhook = z.infer<typeof createdWebhookSchema>;

export const deletedWebhookSchema = z.strictObject({ ok: z.literal(true), id: z.string() });
export const webhookTestResultSchema = z.strictObject({ ok: z.literal(true), event_id: z.string() });

export const deliveryAttemptSchema = z.strictObject({
  id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  attempt: z.number().int().meta({ description: '1 for the first attempt of an event, then each retry.' }),
  status: deliveryStatusSchema,
  response_code: z.number().int().nullable().meta({ description: 'The receiver’s HTTP status; null when none came back.' }),
  error: z.string().nullable(),
  time: timestampSchema,
});
export type DeliveryAttempt = z.infer<typeof deliveryAttemptSchema>;

const WEBHOOK_ID = /^wh_[0-9A-Za-z]{20}$/;

/** The path's webhook id; anything malformed cannot name a webhook, so it is a 404. */
export function webhookIdFrom(pathParameters: Record<string, string | undefined>): string | undefined {
  const id = pathParameters.webhook_id;
  return id && WEBHOOK_ID.test(id) ? id : undefined;
}
