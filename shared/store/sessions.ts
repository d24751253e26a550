import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { dynamo } from '../aws';
import { tableName } from '../config';

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
  const { Item } = await dynamo().send(new GetCommand({ TableName: tableName('sessions'), Key: { session_hash: sessionHash }, ConsistentRead: true }));
  return Item ? sessionSchema.parse(Item) : undefined;
}
