import { tableName, type Platform } from '../platform';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { standingOf } from '../model/account';
import { revokedApiKey } from '../model/errors';
import { currentGuard } from '../request-guard';

const KEY_ACTIVE = 'is_active = :true';
/** `standingOf(account) === 'in-standing'` (shared/domain/accounts.ts), as a condition on the stored item. */
const ACCOUNT_IN_STANDING = 'confirmed = :true AND suspended = :false AND (attribute_not_exists(deleted_at) OR deleted_at = :null)';

/**
 * Transaction items that hold only while the current request's key is active and its account in standing; none
 * outside a Bearer request. Appended last, so that the indexes of the items before them do not move.
 */
export function requestGuardItems(deps: Platform) {
  const guard = currentGuard(deps);
  if (!guard) return [];
  return [
    {
      ConditionCheck: {
        TableName: tableName(deps, 'apiKeys'),
        Key: { key_hash: guard.keyHash },
        ConditionExpression: KEY_ACTIVE,
        ExpressionAttributeValues: { ':true': true },
      },
    },
    {
      ConditionCheck: {
        TableName: tableName(deps, 'accounts'),
        Key: { account_id: guard.accountId },
        ConditionExpression: ACCOUNT_IN_STANDING,
        ExpressionAttributeValues: { ':true': true, ':false': false, ':null': null },
      },
    },
  ];
}

/** Throws the 401 when the transaction failed on the guard items that start at `index`. */
export function throwIfGuardFailed(error: unknown, index: number): void {
  if (!(error instanceof TransactionCanceledException)) return;
  const reasons = error.CancellationReasons ?? [];
  if ([index, index + 1].some((i) => reasons[i]?.Code === 'ConditionalCheckFailed')) throw revokedApiKey();
}

/** Reads the key and the account again (strongly consistent) and throws the 401 unless both still hold. */
export async function assertRequestStillAuthorized(deps: Platform): Promise<void> {
  const guard = currentGuard(deps);
  if (!guard) return;
  const [key, account] = await Promise.all([
    deps.dynamo.send(new GetCommand({ TableName: tableName(deps, 'apiKeys'), Key: { key_hash: guard.keyHash }, ConsistentRead: true })),
    deps.dynamo.send(
      new GetCommand({ TableName: tableName(deps, 'accounts'), Key: { account_id: guard.accountId }, ConsistentRead: true }),
    ),
  ]);
  if (key.Item?.is_active !== true || standingOf(account.Item) !== 'in-standing') throw revokedApiKey();
}
