import { runtimeSlot, type Platform, tableName } from '../platform';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from '../model/zod';
import {
  emptyBucketTat,
  latestBucket,
  takePlan,
  takeToken,
  type BucketState,
  type BudgetSettings,
  type TakeMode,
  type TakePlan,
  type UpstreamPriority,
} from '../model/upstream-budget';
import { whenConditionHolds } from './dynamo-helpers';

/** The bucket of each upstream token (numbered in the order configured), one item each in the counters table. */
const bucketKey = (slot: number) => ({ name: `upstream-budget#${slot}` });
/** A bucket counted before it was kept as `tat` (tokens and when) has no `tat`: it counts as full. */
const bucketSchema = z.object({ tat: z.number().optional(), hold_until: z.number().default(0) });

const bucketOf = (item: Record<string, unknown> | undefined): BucketState | undefined => {
  const { tat, hold_until } = bucketSchema.parse(item ?? {});
  return tat === undefined ? undefined : { tat, holdUntil: hold_until };
};

/** Not held, or the hold has passed: part of the condition of a take that a 429's hold refuses. */
const NOT_HELD = '(attribute_not_exists(hold_until) OR hold_until <= :now)';

/**
 * One of the plan's conditional writes. It answers the bucket as it is now either way: the new `tat` when it was
 * taken, the item that refused it otherwise (ReturnValuesOnConditionCheckFailure), so that no take ever reads first.
 * When a round sends both writes, the `start` one marks the bucket with the round's nonce and the `queue` one holds
 * only on a bucket without that mark: the `queue` write that lands after its own `start` write cannot take again.
 */
async function tryTake(
  deps: Platform,
  slot: number,
  plan: TakePlan,
  mode: TakeMode,
  nonce: string | undefined,
): Promise<{ taken: boolean; bucket: BucketState | undefined }> {
  const queue = mode === 'queue';
  const bounds = queue ? 'tat BETWEEN :now AND :latest' : '(attribute_not_exists(tat) OR tat < :now)';
  const notOwnStart = queue && nonce ? ' AND (attribute_not_exists(started_by) OR started_by <> :nonce)' : '';
  try {
    const { Attributes } = await deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'counters'),
        Key: bucketKey(slot),
        UpdateExpression: queue ? 'SET tat = tat + :add' : nonce ? 'SET tat = :start, started_by = :nonce' : 'SET tat = :start',
        ConditionExpression: `${bounds}${notOwnStart}${plan.held ? ` AND ${NOT_HELD}` : ''}`,
        ExpressionAttributeValues: {
          ':now': plan.nowMs,
          ...(queue ? { ':latest': plan.latestTat, ':add': plan.addMs } : { ':start': plan.startTat }),
          ...(nonce ? { ':nonce': nonce } : {}),
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { taken: true, bucket: bucketOf(Attributes) };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return { taken: false, bucket: error.Item ? bucketOf(unmarshall(error.Item)) : undefined };
  }
}

/**
 * One round of the plan: its writes at once. Taken when one held (the nonce lets no more than one); the bucket as the
 * latest answer tells it. A write that failed otherwise fails the round only when none took: a token taken is spent.
 */
async function takeRound(deps: Platform, slot: number, plan: TakePlan): Promise<{ taken: boolean; bucket: BucketState | undefined }> {
  const nonce = plan.modes.length > 1 ? deps.ids.uuid() : undefined;
  const settled = await Promise.allSettled(plan.modes.map((mode) => tryTake(deps, slot, plan, mode, nonce)));
  const answers = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const taken = answers.some((answer) => answer.taken);
  const failure = settled.find((result) => result.status === 'rejected');
  if (!taken && failure) throw failure.reason;
  return { taken, bucket: latestBucket(answers.map((answer) => answer.bucket)) };
}

/** Each bucket as this container last saw it: whether it was full decides the writes of a round (see takePlan). */
const lastSeen = runtimeSlot(() => new Map<number, BucketState | undefined>());

/**
 * A refused round told the bucket as it is, and the bucket only ever moves one way (`tat` later), so a take is decided
 * in at most three rounds: the guess, the other mode, and that mode once more after another take changed the bucket.
 */
const MAX_ROUNDS_PER_TAKE = 3;

/** How a take is made: `count` tokens at `nowMs`; `inOneRound` when it runs beside a request's write (see takePlan). */
interface TakeOptions {
  readonly count?: number;
  readonly nowMs?: number;
  readonly inOneRound?: boolean;
}

/**
 * Takes `count` tokens of upstream token `slot`'s budget, one for each call about to be sent; false when this priority
 * may not send on it now (the bucket is spent for it, or a 429's hold stands). Never reads first: each round is one
 * conditional write (two at once `inOneRound`), and a refused one answers what refused it.
 */
export async function takeUpstreamTokens(
  deps: Platform,
  slot: number,
  priority: UpstreamPriority,
  settings: BudgetSettings,
  { count = 1, nowMs = deps.clock.now().getTime(), inOneRound = false }: TakeOptions = {},
): Promise<boolean> {
  const seen = lastSeen.of(deps);
  let known = seen.get(slot);
  for (let round = 0; round < MAX_ROUNDS_PER_TAKE; round++) {
    const { taken, bucket } = await takeRound(deps, slot, takePlan(known, nowMs, priority, settings, count, inOneRound));
    seen.set(slot, bucket);
    if (taken) return true;
    if (!takeToken(bucket, nowMs, priority, settings, count).granted) return false;
    known = bucket ?? { tat: nowMs - 1, holdUntil: 0 };
  }
  return false;
}

/** After a 429 on token `slot`: nothing but workflow steps is sent on it until `untilMs` (a later hold stands). */
export async function holdUpstream(deps: Platform, slot: number, untilMs: number, settings: BudgetSettings): Promise<void> {
  const nowMs = deps.clock.now().getTime();
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'counters'),
        Key: bucketKey(slot),
        // A bucket not counted yet starts empty: a 429 says the upstream's own count is spent.
        UpdateExpression: 'SET hold_until = :until, tat = if_not_exists(tat, :empty)',
        ConditionExpression: 'attribute_not_exists(hold_until) OR hold_until < :until',
        ExpressionAttributeValues: { ':until': untilMs, ':empty': emptyBucketTat(nowMs, settings) },
      }),
    ),
  );
}
