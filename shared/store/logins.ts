import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
import { dynamo } from '../aws';
import { tableName } from '../config';
import { accountSchema, type Account } from './accounts';
import { transactWrite } from './dynamo-helpers';

export const loginSchema = z.object({
  /** Normalised (trimmed, lower-case). */
  email: z.string(),
  account_id: z.string(),
  /** Self-describing: `scrypt$N$r$p$salt$hash`, so parameters can change without a migration. */
  password_hash: z.string(),
  created_at: z.string(),
  password_changed_at: z.string(),
});
export type Login = z.infer<typeof loginSchema>;

export async function getLogin(email: string): Promise<Login | undefined> {
  const { Item } = await dynamo().send(new GetCommand({ TableName: tableName('logins'), Key: { email }, ConsistentRead: true }));
  return Item ? loginSchema.parse(Item) : undefined;
}

/**
 * Opens the account and its login together, on condition that neither exists: two sign-ups with one address race
 * to the same login item and exactly one wins. False when the address was already taken.
 */
export async function insertAccountWithLogin(account: Account, login: Login): Promise<boolean> {
  try {
    await transactWrite({
      TransactItems: [
        { Put: { TableName: tableName('logins'), Item: loginSchema.parse(login), ConditionExpression: 'attribute_not_exists(email)' } },
        {
          Put: {
            TableName: tableName('accounts'),
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

/** Replaces the password hash of an existing login. */
export async function updatePasswordHash(email: string, passwordHash: string, changedAt: string): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: tableName('logins'),
      Key: { email },
      UpdateExpression: 'SET password_hash = :hash, password_changed_at = :at',
      ConditionExpression: 'attribute_exists(email)',
      ExpressionAttributeValues: { ':hash': passwordHash, ':at': changedAt },
    }),
  );
}
