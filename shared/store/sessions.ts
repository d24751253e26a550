import { tableName, type Platform } from '../platform';
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import * as z from '../model/zod';
import { atPasswordVersion } from './accounts';
import { readAll, transactWrite } from './dynamo-helpers';

const sessionSchema = z.object({
  session_hash: z.string(),
  account_id: z.string(),
  csrf_hash: z.string(),
  created_at: z.string(),
  /** Epoch seconds; DynamoDB's TTL removes the item some time after, so reads check it too. */
  expires_at: z.number().int(),
  /** The account's credential generation the session was opened under; it is refused once that has moved on. */
  password_version: z.number().int().default(0),
});
export type Session = z.infer<typeof sessionSchema>;

/**
 * Stores a session on condition, in the same transaction, that its account is still at the session's credential
 * generation: a password changed after it was checked and before the session is written leaves no session behind.
 * False when the generation has moved on (or the account is gone).
 */
export async function insertSession(deps: Platform, session: Session): Promise<boolean> {
  const current = atPasswordVersion(session.password_version);
  try {
    await transactWrite(deps, {
      TransactItems: [
        {
          Put: {
            TableName: tableName(deps, 'sessions'),
            Item: sessionSchema.parse(session),
            ConditionExpression: 'attribute_not_exists(session_hash)',
          },
        },
        { ConditionCheck: { TableName: tableName(deps, 'accounts'), Key: { account_id: session.account_id }, ...current } },
      ],
    });
    return true;
  } catch (error) {
    if (error instanceof TransactionCanceledException && error.CancellationReasons?.[1]?.Code === 'ConditionalCheckFailed') return false;
    throw error;
  }
}

export async function getSession(deps: Platform, sessionHash: string): Promise<Session | undefined> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'sessions'), Key: { session_hash: sessionHash }, ConsistentRead: true }),
  );
  return Item ? sessionSchema.parse(Item) : undefined;
}

/** Ends one session for good (sign-out); a session already gone is fine. */
export async function deleteSession(deps: Platform, sessionHash: string): Promise<void> {
  await deps.dynamo.send(new DeleteCommand({ TableName: tableName(deps, 'sessions'), Key: { session_hash: sessionHash } }));
}

/** Ends every session of an account (password reset); returns how many there were. */
export async function deleteAccountSessions(deps: Platform, accountId: string): Promise<number> {
  const sessions = await readAll(
    deps,
    {
      kind: 'query',
      TableName: tableName(deps, 'sessions'),
      IndexName: 'by_account',
      KeyConditionExpression: 'account_id = :account',
      ExpressionAttributeValues: { ':account': accountId },
    },
    // The index holds keys only.
    z.object({ session_hash: z.string() }),
  );
  await Promise.all(sessions.map((session) => deleteSession(deps, session.session_hash)));
  return sessions.length;
}
