import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { dynamo } from '../aws';
import { tableName } from '../config';
import { readAll } from './dynamo-helpers';

export const sessionSchema = z.object({
  session_hash: z.string(),
  account_id: z.string(),
  csrf_hash: z.string(),
  created_at: z.string(),
  /** Epoch seconds; DynamoDB's TTL removes the item some time after, so reads check it too. */
  expires_at: z.number().int(),
});
export type Session = z.infer<typeof sessionSchema>;

export async function insertSession(session: Session): Promise<void> {
  await dynamo().send(
    new PutCommand({
      TableName: tableName('sessions'),
      Item: sessionSchema.parse(session),
      ConditionExpression: 'attribute_not_exists(session_hash)',
    }),
  );
}

export async function getSession(sessionHash: string): Promise<Session | undefined> {
  const { Item } = await dynamo().send(
    new GetCommand({ TableName: tableName('sessions'), Key: { session_hash: sessionHash }, ConsistentRead: true }),
  );
  return Item ? sessionSchema.parse(Item) : undefined;
}

/** Ends one session for good (sign-out); a session already gone is fine. */
export async function deleteSession(sessionHash: string): Promise<void> {
  await dynamo().send(new DeleteCommand({ TableName: tableName('sessions'), Key: { session_hash: sessionHash } }));
}

/** Ends every session of an account (password reset); returns how many there were. */
export async function deleteAccountSessions(accountId: string): Promise<number> {
  const sessions = await readAll(
    {
      kind: 'query',
      TableName: tableName('sessions'),
      IndexName: 'by_account',
      KeyConditionExpression: 'account_id = :account',
      ExpressionAttributeValues: { ':account': accountId },
    },
    // The index holds keys only.
    z.object({ session_hash: z.string() }),
  );
  await Promise.all(sessions.map((session) => deleteSession(session.session_hash)));
  return sessions.length;
}
