import { tableName, type Platform } from '../platform';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import { KEY_PREFIX_PATTERN } from '../model/api-keys';
import { isoInstant } from '../model/attributes';
import { readAll, transactWrite, whenConditionHolds } from './dynamo-helpers';
import { giveBackCountedPlace, takeCountedPlace } from './counters';

/** The stored key: its hash (never the key itself) and its owner; what the API shows is made by `toApiKeyInfo`. */
export const apiKeySchema = z.object({
  id: z.number().int(),
  name: z.string(),
  key_prefix: z.string().regex(KEY_PREFIX_PATTERN),
  is_active: z.boolean(),
  created_at: z.string(),
  last_used_at: isoInstant.nullable(),
  key_hash: z.string(),
  account_id: z.string(),
  revoked_at: z.string().nullable(),
  /** Counted among its account's active keys while active; a key recorded before they were counted is not. */
  counted: z.boolean().default(false),
});
export type ApiKey = z.infer<typeof apiKeySchema>;

export class KeyLimitError extends Error {
  override readonly name = 'KeyLimitError';
}

/**
 * One count of active keys per account, moved in the same transaction as the key it counts. It lives in the counters
 * table, not on the account, whose item every Bearer write checks in its own transaction: creating keys never makes
 * those collide.
 */
const activeKeysCountName = (accountId: string) => `keys#${accountId}`;

const cancelledByCondition = (error: unknown, index: number) =>
  error instanceof TransactionCanceledException && error.CancellationReasons?.[index]?.Code === 'ConditionalCheckFailed';

/** last_used_at is written at most this often per key, so busy keys do not pay a write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export async function getApiKeyByHash(deps: Platform, keyHash: string): Promise<ApiKey | undefined> {
  // Strongly consistent: a key revoked a moment ago must already be refused.
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'apiKeys'), Key: { key_hash: keyHash }, ConsistentRead: true }),
  );
  return Item ? apiKeySchema.parse(Item) : undefined;
}

/** Records a new active key unless its account already has `limit`: concurrent creates can never pass it. */
export async function insertApiKeyWithinLimit(deps: Platform, key: ApiKey, limit: number): Promise<void> {
  try {
    await transactWrite(deps, {
      TransactItems: [
        takeCountedPlace(deps, activeKeysCountName(key.account_id), limit),
        {
          Put: {
            TableName: tableName(deps, 'apiKeys'),
            Item: apiKeySchema.parse({ ...key, counted: true }),
            ConditionExpression: 'attribute_not_exists(key_hash)',
          },
        },
      ],
    });
  } catch (error) {
    if (cancelledByCondition(error, 0)) throw new KeyLimitError(`at most ${limit} active keys per account`);
    throw error;
  }
}

/** Records use of an active key; a no-op when recorded within the last minute or revoked meanwhile. */
export async function touchApiKey(deps: Platform, key: ApiKey, now: Date): Promise<void> {
  if (key.last_used_at && now.getTime() - Date.parse(key.last_used_at) < LAST_USED_RESOLUTION_MS) return;
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'apiKeys'),
        Key: { key_hash: key.key_hash },
        UpdateExpression: 'SET last_used_at = :now',
        ConditionExpression: 'is_active = :true AND (attribute_not_exists(last_used_at) OR last_used_at = :null OR last_used_at < :now)',
        ExpressionAttributeValues: { ':now': now.toISOString(), ':true': true, ':null': null },
      }),
    ),
  );
}

/** The account's key with that id, if any (keys are listed per account by id). */
export async function getAccountApiKey(deps: Platform, accountId: string, id: number): Promise<ApiKey | undefined> {
  const { Items } = await deps.dynamo.send(
    new QueryCommand({
      TableName: tableName(deps, 'apiKeys'),
      IndexName: 'by_account',
      KeyConditionExpression: 'account_id = :account AND id = :id',
      ExpressionAttributeValues: { ':account': accountId, ':id': id },
    }),
  );
  return Items?.[0] ? apiKeySchema.parse(Items[0]) : undefined;
}

/** The account's keys, revoked ones included, by id. */
export async function listAccountApiKeys(deps: Platform, accountId: string): Promise<ApiKey[]> {
  return readAll(
    deps,
    {
      kind: 'query',
      TableName: tableName(deps, 'apiKeys'),
      IndexName: 'by_account',
      KeyConditionExpression: 'account_id = :account',
      ExpressionAttributeValues: { ':account': accountId },
    },
    apiKeySchema,
  );
}

/**
 * Deactivates the key for good; the very next request with it is refused. A counted key gives its place back in the
 * same transaction, once: only the revocation that finds it active does. False when it was already revoked.
 */
export async function revokeApiKey(deps: Platform, key: ApiKey, at: string): Promise<boolean> {
  const revocation = {
    TableName: tableName(deps, 'apiKeys'),
    Key: { key_hash: key.key_hash },
    UpdateExpression: 'SET is_active = :false, revoked_at = :at',
    ExpressionAttributeValues: { ':false': false, ':true': true, ':at': at },
  };
  try {
    await transactWrite(deps, {
      TransactItems: [
        { Update: { ...revocation, ConditionExpression: 'is_active = :true AND counted = :true' } },
        giveBackCountedPlace(deps, activeKeysCountName(key.account_id)),
      ],
    });
    return true;
  } catch (error) {
    if (!cancelledByCondition(error, 0)) throw error;
  }
  // Revoked already, or never counted: nothing to give back.
  return whenConditionHolds(deps.dynamo.send(new UpdateCommand({ ...revocation, ConditionExpression: 'is_active = :true' })));
}
