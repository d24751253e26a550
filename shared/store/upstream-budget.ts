import { runtimeSlot, type Platform, tableName } from '../platform';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { takeToken, type BucketState, type BudgetSettings, type UpstreamPriority } from '../model/upstream-budget';
import { whenConditionHolds } from './dynamo-helpers';
import { retry, retryPolicies, TRY_AGAIN } from '../retry';

/** The bucket of each upstream token (numbered in the order configured), one item each in the counters table. */
const bucketKey = (slot: number) => ({ name: `upstream-budget#${slot}` });
const bucketSchema = z.object({ tokens: z.number(), at: z.number(), hold_until: z.number().default(0) });

async function readBucket(deps: Platform, slot: number): Promise<BucketState | undefined> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'counters'), Key: bucketKey(slot), ConsistentRead: true }),
  );
  if (!Item) return undefined;
  const { tokens, at, hold_until } = bucketSchema.parse(Item);
  return { tokens, at, holdUntil: hold_until };
}

/** Writes the bucket on condition that it is still as read, so two callers never take the same token. */
async function writeBucket(deps: Platform, slot: number, read: BucketState | undefined, next: BucketState): Promise<boolean> {
  return whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'counters'),
        Key: bucketKey(slot),
        UpdateExpression: 'SET tokens = :tokens, #at = :at, hold_until = :hold',
        // The hold too: a take decided before a 429 was recorded must not write the hold away.
        ConditionExpression: read
          ? '#at = :readAt AND tokens = :readTokens AND (hold_until = :readHold OR attribute_not_exists(hold_until))'
          : 'attribute_not_exists(tokens)',
        ExpressionAttributeNames: { '#at': 'at' },
        ExpressionAttributeValues: {
          ':tokens': next.tokens,
          ':at': next.at,
          ':hold': next.holdUntil,
          ...(read ? { ':readAt': read.at, ':readTokens': read.tokens, ':readHold': read.holdUntil } : {}),
        },
      }),
    ),
  );
}

/**
 * Each bucket as this container last read or wrote it. A take is tried against it first: the write is conditioned on
 * exactly these values, so a stale copy only costs the failed write and a fresh read, and a container that has the
 * bucket to itself takes a token in one round trip instead of two.
 */
const lastSeen = runtimeSlot(() => new Map<number, BucketState | undefined>());

/** Takes a token of upstream token `slot`'s budget for one call; false when this priority may not send on it now. */
export async function takeUpstreamToken(
  deps: Platform,
  slot: number,
  priority: UpstreamPriority,
  settings: BudgetSettings,
  nowMs = deps.clock.now().getTime(),
): Promise<boolean> {
  let known = lastSeen.of(deps).get(slot);
  let fresh = known === undefined;
  return retry(
    retryPolicies.budgetTake,
    async () => {
      if (fresh) {
        known = await readBucket(deps, slot);
        lastSeen.of(deps).set(slot, known);
      }
      const { granted, next } = takeToken(known, nowMs, priority, settings);
      // A refusal is decided on a fresh read only, and changes nothing worth writing.
      if (!granted && fresh) return false;
      if (granted && (await writeBucket(deps, slot, known, next))) {
        lastSeen.of(deps).set(slot, next);
        return true;
      }
      fresh = true;
      return TRY_AGAIN;
    },
    // So busy that the bucket kept moving: the calls it counted are the budget being spent.
    { exhausted: () => false },
  );
}

/** After a 429 on token `slot`: nothing but workflow steps is sent on it until `untilMs` (a later hold stands). */
export async function holdUpstream(deps: Platform, slot: number, untilMs: number): Promise<void> {
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'counters'),
        Key: bucketKey(slot),
        // A bucket not written yet starts empty: a 429 says the upstream's own count is spent.
        UpdateExpression: 'SET hold_until = :until, tokens = if_not_exists(tokens, :zero), #at = if_not_exists(#at, :now)',
        ConditionExpression: 'attribute_not_exists(hold_until) OR hold_until < :until',
        ExpressionAttributeNames: { '#at': 'at' },
        ExpressionAttributeValues: { ':until': untilMs, ':zero': 0, ':now': deps.clock.now().getTime() },
      }),
    ),
  );
}
