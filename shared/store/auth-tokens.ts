import { tableName, type Platform } from '../platform';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import * as z from '../model/zod';

const authTokenSchema = z.object({
  token_hash: z.string(),
  purpose: z.enum(['confirm', 'reset']),
  account_id: z.string(),
  email: z.string(),
  created_at: z.string(),
  /** Epoch seconds; TTL removes the item some time after, so a read checks it too. */
  expires_at: z.number().int(),
  /** The account's credential generation when the link was sent: a change of password since makes it worthless. */
  password_version: z.number().int().default(0),
  /** A confirmation link's own password: the one chosen in the sign-up that sent it, which opening the link must give. */
  password_hash: z.string().optional(),
});
export type AuthToken = z.infer<typeof authTokenSchema>;
export type AuthTokenPurpose = AuthToken['purpose'];

export async function insertAuthToken(deps: Platform, token: AuthToken): Promise<void> {
  await deps.dynamo.send(
    new PutCommand({
      TableName: tableName(deps, 'authTokens'),
      Item: authTokenSchema.parse(token),
      ConditionExpression: 'attribute_not_exists(token_hash)',
    }),
  );
}

/** Reads a token without spending it: undefined when it never existed or was already used. */
export async function getAuthToken(deps: Platform, tokenHash: string): Promise<AuthToken | undefined> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'authTokens'), Key: { token_hash: tokenHash }, ConsistentRead: true }),
  );
  return Item ? authTokenSchema.parse(Item) : undefined;
}

/**
 * Takes a token out for good and returns what it was: one conditional delete, so of two uses racing exactly one
 * gets the item. Undefined when it never existed or was already used.
 */
export async function consumeAuthToken(deps: Platform, tokenHash: string): Promise<AuthToken | undefined> {
  try {
    const { Attributes } = await deps.dynamo.send(
      new DeleteCommand({
        TableName: tableName(deps, 'authTokens'),
        Key: { token_hash: tokenHash },
        ConditionExpression: 'attribute_exists(token_hash)',
        ReturnValues: 'ALL_OLD',
      }),
    );
    return Attributes ? authTokenSchema.parse(Attributes) : undefined;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}
