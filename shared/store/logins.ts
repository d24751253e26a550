import { tableName, type Platform } from '../platform';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import * as z from '../model/zod';
import { accountSchema, atPasswordVersion, type Account } from './accounts';
import { transactWrite } from './dynamo-helpers';

const loginSchema = z.object({
  /** Normalised (trimmed, lower-case). */
  email: z.string(),
  account_id: z.string(),
  /** Self-describing: `scrypt$N$r$p$salt$hash`, so parameters can change without a migration. */
  password_hash: z.string(),
  created_at: z.string(),
  password_changed_at: z.string(),
  /** The account's credential generation, copied here so that one read gives a hash and the generation it belongs to. */
  password_version: z.number().int().default(0),
});
export type Login = z.infer<typeof loginSchema>;

export async function getLogin(deps: Platform, email: string): Promise<Login | undefined> {
  const { Item } = await deps.dynamo.send(new GetCommand({ TableName: tableName(deps, 'logins'), Key: { email }, ConsistentRead: true }));
  return Item ? loginSchema.parse(Item) : undefined;
}

/**
 * Opens the account and its login together, on condition that neither exists: two sign-ups with one address race
 * to the same login item and exactly one wins. False when the address was already taken.
 */
export async function insertAccountWithLogin(deps: Platform, account: Account, login: Login): Promise<boolean> {
  try {
    await transactWrite(deps, {
      TransactItems: [
        {
          Put: { TableName: tableName(deps, 'logins'), Item: loginSchema.parse(login), ConditionExpression: 'attribute_not_exists(email)' },
        },
        {
          Put: {
            TableName: tableName(deps, 'accounts'),
            Item: accountSchema.parse(account),
            ConditionExpression: 'attribute_not_exists(account_id)',
          },
        },
      ],
    });
    return true;
  } catch (error) {
    if (error instanceof TransactionCanceledException && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
    throw error;
  }
}

export interface PasswordChange {
  readonly accountId: string;
  readonly email: string;
  readonly passwordHash: string;
  /** The generation the link that asks for the change was issued under. */
  readonly fromVersion: number;
  readonly changedAt: string;
}

/**
 * Sets a new password and moves the account on to the next credential generation, in one transaction on condition
 * that the account is still at the generation the link was issued under: of two links racing, or a link older than
 * the last change, at most one takes effect, and every session opened under an earlier generation is worthless from
 * that moment. It also confirms the address, which opening the link has just proven. False when the generation has
 * moved on, or the login no longer belongs to the account.
 */
export async function changePassword(
  deps: Platform,
  { accountId, email, passwordHash, fromVersion, changedAt }: PasswordChange,
): Promise<boolean> {
  const current = atPasswordVersion(fromVersion);
  try {
    await transactWrite(deps, {
      TransactItems: [
        {
          Update: {
            TableName: tableName(deps, 'accounts'),
            Key: { account_id: accountId },
            UpdateExpression: 'SET password_version = :next, confirmed = :true',
            ConditionExpression: current.ConditionExpression,
            ExpressionAttributeValues: { ...current.ExpressionAttributeValues, ':next': fromVersion + 1, ':true': true },
          },
        },
        {
          Update: {
            TableName: tableName(deps, 'logins'),
            Key: { email },
            UpdateExpression: 'SET password_hash = :hash, password_changed_at = :at, password_version = :next',
            ConditionExpression: 'account_id = :account',
            ExpressionAttributeValues: { ':hash': passwordHash, ':at': changedAt, ':next': fromVersion + 1, ':account': accountId },
          },
        },
      ],
    });
    return true;
  } catch (error) {
    if (
      error instanceof TransactionCanceledException &&
      error.CancellationReasons?.some((reason) => reason.Code === 'ConditionalCheckFailed')
    )
      return false;
    throw error;
  }
}
