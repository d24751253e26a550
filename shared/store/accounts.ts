import { tableName, type Platform } from '../platform';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { whenConditionHolds } from './dynamo-helpers';

export const accountSchema = z.object({
  account_id: z.string(),
  email: z.string(),
  confirmed: z.boolean(),
  suspended: z.boolean(),
  deleted_at: z.string().nullable().default(null),
  /** Integer micro-dollars. */
  balance: z.number().int(),
  /** Only deposits add to it and nothing takes from it, so "has ever deposited $1" is simply total >= $1. */
  total_deposited: z.number().int(),
  billing_paused: z.boolean(),
  created_at: z.string(),
  /**
   * The credential generation: every change of password adds one. A session and an e-mailed link carry the
   * generation they were issued under and are worthless once it has moved on.
   */
  password_version: z.number().int().default(0),
});
export type Account = z.infer<typeof accountSchema>;

export async function getAccount(deps: Platform, accountId: string): Promise<Account | undefined> {
  // Strongly consistent: balances, suspensions and pauses decided a moment ago apply to the very next request.
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'accounts'), Key: { account_id: accountId }, ConsistentRead: true }),
  );
  return Item ? accountSchema.parse(Item) : undefined;
}

export async function insertAccount(deps: Platform, account: Account): Promise<void> {
  await deps.dynamo.send(
    new PutCommand({
      TableName: tableName(deps, 'accounts'),
      Item: accountSchema.parse(account),
      ConditionExpression: 'attribute_not_exists(account_id)',
    }),
  );
}

export type AccountFlags = Partial<Pick<Account, 'confirmed' | 'suspended' | 'deleted_at'>>;

/** Operator changes to an account's standing; false when the account does not exist. */
export async function updateAccountFlags(deps: Platform, accountId: string, flags: AccountFlags): Promise<boolean> {
  const entries = Object.entries(flags);
  if (entries.length === 0) return true;
  return whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'accounts'),
        Key: { account_id: accountId },
        UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
        ConditionExpression: 'attribute_exists(account_id)',
        ExpressionAttributeNames: Object.fromEntries(entries.map(([key], i) => [`#f${i}`, key])),
        ExpressionAttributeValues: Object.fromEntries(entries.map(([, value], i) => [`:v${i}`, value])),
      }),
    ),
  );
}

/**
 * Sets or lifts the billing pause, on condition that the balance still justifies it (at or below zero to set,
 * above zero to lift) and that it is not already so. True when this call made the change.
 */
export async function setBillingPaused(deps: Platform, accountId: string, paused: boolean): Promise<boolean> {
  return whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'accounts'),
        Key: { account_id: accountId },
        UpdateExpression: 'SET billing_paused = :paused',
        ConditionExpression: paused ? 'balance <= :zero AND billing_paused = :false' : 'balance > :zero AND billing_paused = :true',
        ExpressionAttributeValues: { ':paused': paused, ':zero': 0, ...(paused ? { ':false': false } : { ':true': true }) },
      }),
    ),
  );
}

/**
 * A condition, for the transaction of a system power-off, that the account is still billing-paused: a deposit that
 * lands after the decision leaves its servers running.
 */
export function stillBillingPausedCheck(deps: Platform, accountId: string) {
  return {
    ConditionCheck: {
      TableName: tableName(deps, 'accounts'),
      Key: { account_id: accountId },
      ConditionExpression: 'billing_paused = :true',
      ExpressionAttributeValues: { ':true': true },
    },
  };
}

/**
 * The condition that an account exists and is still at this credential generation. Accounts from before
 * generations were kept have none, which counts as generation 0.
 */
export function atPasswordVersion(version: number) {
  return {
    ConditionExpression:
      version === 0
        ? 'attribute_exists(account_id) AND (attribute_not_exists(password_version) OR password_version = :version)'
        : 'password_version = :version',
    ExpressionAttributeValues: { ':version': version },
  };
}
