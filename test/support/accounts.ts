import { tableName, type Platform } from '../../shared/platform';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { BurningSegment } from '../../shared/model/burn';

/** Puts an account into a billing state directly, for the rows that depend on it. */
export async function setBillingState(
  deps: Platform,
  accountId: string,
  state: { balance?: number; billing_paused?: boolean; burning?: Readonly<Record<string, BurningSegment>> },
): Promise<void> {
  const entries = Object.entries(state);
  await deps.dynamo.send(
    new UpdateCommand({
      TableName: tableName(deps, 'accounts'),
      Key: { account_id: accountId },
      UpdateExpression: `SET ${entries.map(([key]) => `${key} = :${key}`).join(', ')}`,
      ExpressionAttributeValues: Object.fromEntries(entries.map(([key, value]) => [`:${key}`, value])),
    }),
  );
}
