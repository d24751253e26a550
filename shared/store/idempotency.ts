import { tableName, type Platform } from '../platform';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from '../model/zod';
import { whenConditionHolds } from './dynamo-helpers';
import { TTL_ATTRIBUTE } from '../tables';

/** How long a key's first response is kept for replay. */
export const IDEMPOTENCY_RETENTION_SECONDS = 24 * 3600;
/**
 * An in-progress claim older than this belongs to a request that died; a retry may take it over. Longer than any
 * idempotent route's function may run, so that a live request never loses its claim.
 */
export const IDEMPOTENCY_LOCK_SECONDS = 60;

const storedResponseSchema = z.object({
  statusCode: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  /**
   * The body is an encrypted message, not the body itself: how answers carrying credentials were kept before they
   * were kept without them. Such a record still replays until it expires.
   */
  sealed: z.boolean().default(false),
});
export type StoredResponse = z.input<typeof storedResponseSchema>;

const idempotencyRecordSchema = z.object({
  idempotency_key: z.string(),
  request_hash: z.string(),
  status: z.enum(['in_progress', 'completed']),
  response: storedResponseSchema.nullable(),
  /** Epoch seconds after which an in-progress claim is taken to have died with its request. */
  locked_until: z.number().int(),
  [TTL_ATTRIBUTE]: z.number().int(),
});
type IdempotencyRecord = z.infer<typeof idempotencyRecordSchema>;

/** A claim that took over an abandoned one carries it: its request may have committed before it died. */
export type Claim = { claimed: true; lapsed?: IdempotencyRecord } | { claimed: false; existing: IdempotencyRecord };

/**
 * Claims the key for this request in one round trip: the conditional put succeeds for a new, expired or abandoned
 * key, and hands back the abandoned claim it replaced; otherwise the failed condition hands back the record there.
 */
export async function claimIdempotencyKey(
  deps: Platform,
  key: string,
  requestHash: string,
  nowSeconds: number,
  ttlSeconds: number,
  lockSeconds: number,
): Promise<Claim> {
  try {
    const { Attributes } = await deps.dynamo.send(
      new PutCommand({
        TableName: tableName(deps, 'idempotency'),
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
        ReturnValues: 'ALL_OLD',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    const replaced = Attributes ? idempotencyRecordSchema.parse(Attributes) : undefined;
    const lapsed = replaced?.status === 'in_progress' && replaced[TTL_ATTRIBUTE] >= nowSeconds ? replaced : undefined;
    return lapsed ? { claimed: true, lapsed } : { claimed: true };
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException && error.Item) {
      return { claimed: false, existing: idempotencyRecordSchema.parse(unmarshall(error.Item)) };
    }
    throw error;
  }
}

/** Keeps the key's response; `requestHash` gives the key back to the request that committed under it. */
export async function completeIdempotencyKey(deps: Platform, key: string, response: StoredResponse, requestHash?: string): Promise<void> {
  await deps.dynamo.send(
    new UpdateCommand({
      TableName: tableName(deps, 'idempotency'),
      Key: { idempotency_key: key },
      UpdateExpression: `SET #status = :completed, #response = :response${requestHash === undefined ? '' : ', request_hash = :hash'}`,
      ExpressionAttributeNames: { '#status': 'status', '#response': 'response' },
      ExpressionAttributeValues: {
        ':completed': 'completed',
        ':response': storedResponseSchema.parse(response),
        ...(requestHash === undefined ? {} : { ':hash': requestHash }),
      },
    }),
  );
}

/** Gives the key up (the request did not complete), so that a retry with it is processed afresh. */
export async function releaseIdempotencyKey(deps: Platform, key: string): Promise<void> {
  await deps.dynamo.send(new DeleteCommand({ TableName: tableName(deps, 'idempotency'), Key: { idempotency_key: key } }));
}

/** Ends the claim's lock now: the request is over but may have committed, so a retry takes the claim over and resumes it. */
export async function lapseIdempotencyKey(deps: Platform, key: string): Promise<void> {
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'idempotency'),
        Key: { idempotency_key: key },
        UpdateExpression: 'SET locked_until = :lapsed',
        ConditionExpression: '#status = :inProgress',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':lapsed': 0, ':inProgress': 'in_progress' },
      }),
    ),
  );
}

/**
 * The item a keyed create writes in its own transaction, under a key no claim can have (a claim's starts with the
 * account id): a claim taken over after its request died finds in it what that request committed. Its condition
 * keeps a second create from committing under the same key while the first's is kept.
 */
const commitKeyOf = (key: string) => `committed#${key}`;

export function commitMarkerPut(deps: Platform, key: string, instanceId: number, nowSeconds: number) {
  return {
    Put: {
      TableName: tableName(deps, 'idempotency'),
      Item: { idempotency_key: commitKeyOf(key), instance_id: instanceId, [TTL_ATTRIBUTE]: nowSeconds + IDEMPOTENCY_RETENTION_SECONDS },
      ConditionExpression: 'attribute_not_exists(idempotency_key) OR #ttl < :now',
      ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE },
      ExpressionAttributeValues: { ':now': nowSeconds },
    },
  };
}

const commitMarkerSchema = z.object({ instance_id: z.number().int(), [TTL_ATTRIBUTE]: z.number().int() });

/** The instance a create committed under this key, if one did (and its marker has not expired). */
export async function committedInstanceOf(deps: Platform, key: string, nowSeconds: number): Promise<number | undefined> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'idempotency'), Key: { idempotency_key: commitKeyOf(key) }, ConsistentRead: true }),
  );
  const marker = Item ? commitMarkerSchema.parse(Item) : undefined;
  return marker && marker[TTL_ATTRIBUTE] >= nowSeconds ? marker.instance_id : undefined;
}
