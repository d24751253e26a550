import { tableName, type Platform } from '../platform';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import * as z from '../model/zod';
import { GetCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { readAll, transactWrite } from './dynamo-helpers';
import { ledgerKindSchema } from '../model/ledger';

/** Money in from outside: counts towards the total ever deposited (which unlocks key creation). */
const DEPOSIT_KINDS = new Set(['deposit', 'top_up']);

const ledgerEntrySchema = z.object({
  account_id: z.string(),
  /**
   * Deterministic for usage (`meter#<instance>#<piece start>`, `statement#<midnight>`), so a retried booking is
   * refused as a duplicate.
   */
  entry_id: z.string(),
  kind: ledgerKindSchema,
  /** Integer micro-dollars; positive for deposits, negative for charges. */
  amount: z.number().int(),
  instance_id: z.number().int().optional(),
  period_start: z.string().optional(),
  period_end: z.string().optional(),
  description: z.string().optional(),
  /** For usage: what each billing segment contributed to the amount, at its own rate (a statement's name their instance). */
  pieces: z
    .array(
      z.object({
        instance_id: z.number().int().optional(),
        start: z.string(),
        end: z.string().nullable(),
        hourly_micros: z.number().int(),
        quarters: z.number().int(),
        from: z.string(),
        to: z.string(),
        amount: z.number().int(),
      }),
    )
    .optional(),
  created_at: z.string(),
});
export type LedgerEntry = z.infer<typeof ledgerEntrySchema>;

export function ledgerEntryPut(deps: Platform, entry: LedgerEntry) {
  return {
    Put: {
      TableName: tableName(deps, 'ledger'),
      Item: ledgerEntrySchema.parse(entry),
      ConditionExpression: 'attribute_not_exists(entry_id)',
    },
  };
}

function balanceUpdate(deps: Platform, accountId: string, amount: number, alsoTotalDeposited: boolean) {
  return {
    Update: {
      TableName: tableName(deps, 'accounts'),
      Key: { account_id: accountId },
      UpdateExpression: alsoTotalDeposited ? 'ADD balance :amount, total_deposited :amount' : 'ADD balance :amount',
      ConditionExpression: 'attribute_exists(account_id)',
      ExpressionAttributeValues: { ':amount': amount },
    },
  };
}

/** True when the transaction was refused because the entry id was already recorded. */
function isDuplicateEntry(error: unknown): boolean {
  return error instanceof TransactionCanceledException && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed';
}

/** One more write of the same transaction (the top-up a payment settles, say), whose condition must hold too. */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * Books a movement of money: the ledger entry and the balance move in one atomic transaction (ADD, so concurrent
 * movements never lose an update), with whatever else must change with them; the entry id makes a retry a no-op.
 * False for a duplicate entry (the other writes' conditions failing throw).
 */
export async function recordLedgerEntry(deps: Platform, entry: LedgerEntry, ...alongside: TransactItem[]): Promise<boolean> {
  try {
    await transactWrite(deps, {
      TransactItems: [
        ledgerEntryPut(deps, entry),
        balanceUpdate(deps, entry.account_id, entry.amount, DEPOSIT_KINDS.has(entry.kind)),
        ...alongside,
      ],
    });
    return true;
  } catch (error) {
    if (isDuplicateEntry(error)) return false;
    throw error;
  }
}

/** One entry of the account's, by its id, read consistently. */
export async function getLedgerEntry(deps: Platform, accountId: string, entryId: string): Promise<LedgerEntry | undefined> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'ledger'), Key: { account_id: accountId, entry_id: entryId }, ConsistentRead: true }),
  );
  return Item ? ledgerEntrySchema.parse(Item) : undefined;
}

export async function listLedgerEntries(deps: Platform, accountId: string): Promise<LedgerEntry[]> {
  return readAll(
    deps,
    {
      kind: 'query',
      TableName: tableName(deps, 'ledger'),
      KeyConditionExpression: 'account_id = :account',
      ExpressionAttributeValues: { ':account': accountId },
    },
    ledgerEntrySchema,
  );
}
