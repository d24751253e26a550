import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo } from '../aws';
import { tableName } from '../config';

/**
 * Credits a deposit: the ledger entry and the balance move in one transaction, and the entry id is the
 * idempotency key, so a retried deposit never credits twice.
 */
export async function recordDeposit(accountId: string, amountMicros: number, entryId: string, at: string): Promise<void> {
  if (!Number.isSafeInteger(amountMicros) || amountMicros <= 0) throw new Error('deposit must be a positive integer');
  await dynamo().send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: tableName('ledger'),
            Item: { account_id: accountId, entry_id: entryId, kind: 'deposit', amount: amountMicros, created_at: at },
            ConditionExpression: 'attribute_not_exists(entry_id)',
          },
        },
        {
          Update: {
            TableName: tableName('accounts'),
            Key: { account_id: accountId },
            UpdateExpression: 'ADD balance :amount, total_deposited :amount',
            ConditionExpression: 'attribute_exists(account_id)',
            ExpressionAttributeValues: { ':amount': amountMicros },
          },
        },
      ],
    }),
  );
}
