import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from 'zod';
import { dynamo } from '../aws';
import { tableName } from '../config';
import { TTL_ATTRIBUTE } from '../tables';

const storedResponseSchema = z.object({
  statusCode: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  /** The body is an encrypted message (it carries customers' credentials), not the body itself. */
  sealed: z.boolean().default(false),
});
export type StoredResponse = z.input<typeof storedResponseSchema>;

export const idempotencyRecordSchema = z.object({
  idempotency_key: z.string(),
  request_hash: z.string(),
  status: z.enum(['in_progress', 'completed']),
  response: storedResponseSchema.nullable(),
  /** Epoch seconds after which an in-progress claim is taken to have died with its request. */
  locked_until: z.number().int(),
  [TTL_ATTRIBUTE]: z.number().int(),
});
export type IdempotencyRecord = z.infer<typeof idempotencyRecordSchema>;

export type Claim = { claimed: true } | { claimed: false; existing: IdempotencyRecord };

/**
 * Claims the key for this request in one round trip: the conditional put succeeds for a new, expired or abandoned
 * key; otherwise the failed condition hands back the record already there.
 */
export async function claimIdempotencyKey(
  key: string,
  requestHash: string,
  nowSeconds: number,
  ttlSeconds: number,
  lockSeconds: number,
): Promise<Claim> {
  try {
    await dynamo().send(
      new PutCommand({
        TableName: tableName('idempotency'),
        Item: {
          idempotency_key: key,
          request_hash: requestHash,
          status: 'in_progress',
          response: null,
          locked_until: nowSeconds + lockSeconds,
          [TTL_ATTRIBUTE]: nowSeconds + ttlSeconds,
        },
        ConditionExpression: 'attribute_not_exists(idempotency_key) OR #ttl < :now OR (#status = :inProgress AND locked_until < :now)',
        ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE, '#status': 'status' },
        ExpressionAttributeValues: { ':now': nowSeconds, ':inProgress': 'in_progress' },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { claimed: true };
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException && error.Item) {
      return { claimed: false, existing: idempotencyRecordSchema.parse(unmarshall(error.Item)) };
    }
    throw error;
  }
}

export async function completeIdempotencyKey(key: string, response: StoredResponse): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: tableName('idempotency'),
      Key: { idempotency_key: key },
      UpdateExpression: 'SET #status = :completed, #response = :response',
      ExpressionAttributeNames: { '#status': 'status', '#response': 'response' },
      ExpressionAttributeValues: { ':completed': 'completed', ':response': storedResponseSchema.parse(response) },
    }),
  );
}

/** Gives the key up (the request did not complete), so that a retry with it is processed afresh. */
export async function releaseIdempotencyKey(key: string): Promise<void> {
  await dynamo().send(new DeleteCommand({ TableName: tableName('idempotency'), Key: { idempotency_key: key } }));
}
