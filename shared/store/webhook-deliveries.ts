import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { dynamo } from '../aws';
import { tableName } from '../config';
import { TTL_ATTRIBUTE } from '../tables';
import { deliveryAttemptSchema, type DeliveryAttempt } from '../schemas/webhooks';

/** Attempts are kept this long for GET …/deliveries, then expire. */
const KEEP_SECONDS = 7 * 24 * 3_600;

const attemptItemSchema = z.object({ ...deliveryAttemptSchema.shape, webhook_id: z.string(), attempt_id: z.string() });

/** Records one attempt; the sort key orders attempts by time. */
export async function recordDeliveryAttempt(webhookId: string, attempt: DeliveryAttempt): Promise<void> {
  await dynamo().send(
    new PutCommand({
      TableName: tableName('webhookDeliveries'),
      Item: {
        ...attemptItemSchema.parse({ ...attempt, webhook_id: webhookId, attempt_id: `${attempt.time}#${attempt.id}` }),
        [TTL_ATTRIBUTE]: Math.floor(Date.parse(attempt.time) / 1000) + KEEP_SECONDS,
      },
    }),
  );
}

/** The endpoint's most recent attempts, newest first. */
export async function listRecentDeliveryAttempts(webhookId: string, limit: number): Promise<DeliveryAttempt[]> {
  const { Items } = await dynamo().send(
    new QueryCommand({
      TableName: tableName('webhookDeliveries'),
      KeyConditionExpression: 'webhook_id = :webhook',
      ExpressionAttributeValues: { ':webhook': webhookId },
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  return (Items ?? []).map((item) => {
    const { webhook_id: _webhook, attempt_id: _key, ...attempt } = attemptItemSchema.parse(item);
    return attempt;
  });
}
