import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo } from '../../shared/aws';
import { tableName } from '../../shared/config';

/** Puts an account into a billing state directly, for the rows that depend on it. */
export async function setBillingState(accountId: string, state: { balance?: number; billing_paused?: boolean }): Promise<void> {
  const entries = Object.entries(state);
  await dynamo().send(
    new UpdateCommand({
      TableName: tableName('accounts'),
      Key: { account_id: accountId },
      UpdateExpression: `SET ${entries.map(([key]) => `${key} = :${key}`).join(', ')}`,
      ExpressionAttributeValues: Object.fromEntries(entries.map(([key, value]) => [`:${key}`, value])),
    }),
  );
}
