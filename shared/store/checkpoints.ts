import { tableName, type Platform } from '../platform';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import { accountHash, reviewAtOf, type BookedPiece, type BurningSegment } from '../model/burn';
import type { Account } from './accounts';
import { ledgerEntryPut, type LedgerEntry, type TransactItem } from './ledger';

/** The review index is spread over this many shards (`review_shard` = `review#<hash of the account id mod 16>`). */
export const REVIEW_SHARDS = 16;

export const reviewShardOf = (accountId: string) => `review#${accountHash(accountId) % REVIEW_SHARDS}`;

/** A move of an account's checkpoint: its open segments after, what the pieces booked with it cost, a pause set or lifted. */
export interface CheckpointMove {
  readonly burning: Record<string, BurningSegment>;
  /** The settled balance's change: minus what the pieces booked in the same transaction cost. */
  readonly delta: number;
  readonly billingPaused?: boolean;
}

/**
 * The account's part of a transaction that moves its checkpoint: the open segments, the settled balance (ADD, so a
 * deposit landing meanwhile is kept), the pause, and the next review (in the sparse review index, or out of it when
 * nothing is billed), on condition that the checkpoint is still at the version read: moves of one account are serial.
 */
function checkpointMoveItem(deps: Platform, account: Account, move: CheckpointMove, nowMs: number): TransactItem {
  const billingPaused = move.billingPaused ?? account.billing_paused;
  const reviewAt = reviewAtOf(
    { ...account, balance: account.balance + move.delta, burning: move.burning, billing_paused: billingPaused },
    nowMs,
  );
  // No open segments is no attribute: an empty map is not written (DynamoDB Local's change stream cannot carry one).
  const billed = Object.keys(move.burning).length > 0;
  const set = [...(billed ? ['burning = :burning'] : []), 'billing_version = :next'];
  const remove = [...(billed ? [] : ['burning']), ...(reviewAt === null ? ['review_at', 'review_shard'] : [])];
  const values: Record<string, unknown> = {
    ...(billed ? { ':burning': move.burning } : {}),
    ':next': account.billing_version + 1,
    ':version': account.billing_version,
    ':delta': move.delta,
  };
  if (reviewAt !== null) {
    set.push('review_at = :review_at', 'review_shard = :review_shard');
    values[':review_at'] = new Date(reviewAt).toISOString();
    values[':review_shard'] = reviewShardOf(account.account_id);
  }
  if (billingPaused !== account.billing_paused) {
    // When it changed: the account.billing_paused and account.billing_resumed events are dated by it.
    set.push('billing_paused = :paused', 'billing_paused_at = :paused_at');
    values[':paused'] = billingPaused;
    values[':paused_at'] = new Date(nowMs).toISOString();
  }
  return {
    Update: {
      TableName: tableName(deps, 'accounts'),
      Key: { account_id: account.account_id },
      UpdateExpression: `SET ${set.join(', ')} ADD balance :delta${remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : ''}`,
      ConditionExpression:
        account.billing_version === 0
          ? 'attribute_exists(account_id) AND (attribute_not_exists(billing_version) OR billing_version = :version)'
          : 'billing_version = :version',
      ExpressionAttributeValues: values,
    },
  };
}

/** The ledger entry of booked pieces: one instance's closed piece, or an account's daily statement. */
export function usageEntry(accountId: string, entryId: string, pieces: readonly BookedPiece[], nowIso: string): LedgerEntry {
  const single = pieces.length === 1 ? pieces[0] : undefined;
  return {
    account_id: accountId,
    entry_id: entryId,
    kind: 'meter',
    amount: -pieces.reduce((sum, piece) => sum + piece.amount, 0),
    ...(single ? { instance_id: single.instance_id } : {}),
    period_start: pieces.map((piece) => piece.from).sort()[0] ?? nowIso,
    period_end:
      pieces
        .map((piece) => piece.to)
        .sort()
        .at(-1) ?? nowIso,
    pieces: pieces.map((piece) => ({ ...piece })),
    created_at: nowIso,
  };
}

/** The writes that book pieces and move the checkpoint together. */
export function bookingItems(
  deps: Platform,
  account: Account,
  entry: LedgerEntry | null,
  move: CheckpointMove,
  nowMs: number,
): TransactItem[] {
  // A piece too short to cost a micro-dollar is booked all the same: the pieces cover billed time without a gap.
  return [
    ...(entry && (entry.pieces?.length ?? 0) > 0 ? [ledgerEntryPut(deps, entry)] : []),
    checkpointMoveItem(deps, account, move, nowMs),
  ];
}

const accountCheckOf = (deps: Platform, item: TransactItem, accountId: string) =>
  item.ConditionCheck?.TableName === tableName(deps, 'accounts') && item.ConditionCheck.Key?.account_id === accountId
    ? item.ConditionCheck
    : undefined;

/**
 * A transaction may hold one operation per item: condition checks on the account a settlement writes (its standing
 * for the request, its billing pause) are folded into the settlement's write to it, ANDed with its own condition
 * (their placeholders keep their values: `:true`, `:false` and `:null` mean the same everywhere). Without a
 * settlement nothing changes. Says where folded checks came from, to tell their refusal from a moved checkpoint.
 */
export function foldAccountChecks(
  deps: Platform,
  settlement: readonly TransactItem[],
  accountId: string,
  checks: readonly TransactItem[],
  guard: readonly TransactItem[],
): { settlement: TransactItem[]; checks: TransactItem[]; guard: TransactItem[]; fromChecks: boolean; fromGuard: boolean } {
  const write = settlement.at(-1)?.Update;
  const isFolded = (item: TransactItem) => write !== undefined && accountCheckOf(deps, item, accountId) !== undefined;
  if (!write) return { settlement: [...settlement], checks: [...checks], guard: [...guard], fromChecks: false, fromGuard: false };
  const foldable = [...checks, ...guard].flatMap((item) => accountCheckOf(deps, item, accountId) ?? []);
  const condition = [write.ConditionExpression, ...foldable.map((check) => check.ConditionExpression)].map((c) => `(${c})`).join(' AND ');
  const values = Object.assign({}, ...foldable.map((check) => check.ExpressionAttributeValues), write.ExpressionAttributeValues);
  return {
    settlement: [...settlement.slice(0, -1), { Update: { ...write, ConditionExpression: condition, ExpressionAttributeValues: values } }],
    checks: checks.filter((item) => !isFolded(item)),
    guard: guard.filter((item) => !isFolded(item)),
    fromChecks: checks.some(isFolded),
    fromGuard: guard.some(isFolded),
  };
}

/** The accounts due for review by `untilIso` on one shard of the review index, earliest first, a page at a time. */
export async function* listAccountsDue(
  deps: Platform,
  shard: number,
  untilIso: string,
): AsyncGenerator<{ account_id: string; review_at: string }[]> {
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await deps.dynamo.send(
      new QueryCommand({
        TableName: tableName(deps, 'accounts'),
        IndexName: 'review_by_shard',
        KeyConditionExpression: 'review_shard = :shard AND review_at <= :until',
        ExpressionAttributeValues: { ':shard': `review#${shard}`, ':until': untilIso },
        ExclusiveStartKey: startKey,
      }),
    );
    yield z.array(z.object({ account_id: z.string(), review_at: z.string() })).parse(page.Items ?? []);
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}
