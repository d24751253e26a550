import { tableName, type Platform } from '../platform';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import { TTL_ATTRIBUTE } from '../tables';
import { deliveryStatusSchema } from '../model/webhook-events';
import { isoInstant } from '../model/attributes';

/** Attempts are kept this long for GET …/deliveries, then expire. */
const KEEP_SECONDS = 7 * 24 * 3_600;

/** One stored delivery attempt; what the API shows of it is made by `toDeliveryAttemptView` (shared/domain/views.ts). */
export const deliveryAttemptItemSchema = z.object({
  id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  /** 1 for the first attempt of an event, then each retry. */
  attempt: z.number().int(),
  status: deliveryStatusSchema,
  /** The receiver's HTTP status; null when none came back. */
  response_code: z.number().int().nullable(),
  error: z.string().nullable(),
  time: isoInstant,
  webhook_id: z.string(),
  /** The sort key: the attempt's time, then its id. */
  attempt_id: z.string(),
});
export type DeliveryAttemptItem = z.infer<typeof deliveryAttemptItemSchema>;

/** An attempt to record: the keys are derived from the endpoint and the attempt. */
export type NewDeliveryAttempt = Omit<DeliveryAttemptItem, 'webhook_id' | 'attempt_id'>;

/** Records one attempt; the sort key orders attempts by time. */
export async function recordDeliveryAttempt(deps: Platform, webhookId: string, attempt: NewDeliveryAttempt): Promise<void> {
  await deps.dynamo.send(
    new PutCommand({
      TableName: tableName(deps, 'webhookDeliveries'),
      Item: {
        ...deliveryAttemptItemSchema.parse({ ...attempt, webhook_id: webhookId, attempt_id: `${attempt.time}#${attempt.id}` }),
        [TTL_ATTRIBUTE]: Math.floor(Date.parse(attempt.time) / 1000) + KEEP_SECONDS,
      },
    }),
  );
}

/** The endpoint's most recent attempts, newest first. */
export async function listRecentDeliveryAttempts(deps: Platform, webhookId: string, limit: number): Promise<DeliveryAttemptItem[]> {
  const { Items } = await deps.dynamo.send(
    new QueryCommand({
      TableName: tableName(deps, 'webhookDeliveries'),
      KeyConditionExpression: 'webhook_id = :webhook',
      ExpressionAttributeValues: { ':webhook': webhookId },
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  return (Items ?? []).map((item) => deliveryAttemptItemSchema.parse(item));
}
