import { tableName, type Platform } from '../platform';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { whenConditionHolds } from './dynamo-helpers';

/**
 * One lease per meter shard, an item of the counters table (`meter-lease#<shard>`): whoever holds it meters the shard,
 * anyone else leaves the shard alone until it is released or has expired. A holder that dies leaves it to expire.
 */
const leaseKey = (shard: string) => ({ name: `meter-lease#${shard}` });

/**
 * Takes the shard's lease for `holder` until `untilMs`: true when it was free, expired, or already this holder's (a
 * retry of the same work takes it over); false while someone else holds it.
 */
export async function takeMeterLease(deps: Platform, shard: string, holder: string, nowMs: number, untilMs: number): Promise<boolean> {
  return whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'counters'),
        Key: leaseKey(shard),
        UpdateExpression: 'SET holder = :holder, held_until = :until',
        ConditionExpression: 'attribute_not_exists(held_until) OR held_until <= :now OR holder = :holder',
        ExpressionAttributeValues: { ':holder': holder, ':until': untilMs, ':now': nowMs },
      }),
    ),
  );
}

/** Gives the lease back, if this holder still has it. */
export async function releaseMeterLease(deps: Platform, shard: string, holder: string): Promise<void> {
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'counters'),
        Key: leaseKey(shard),
        UpdateExpression: 'REMOVE holder, held_until',
        ConditionExpression: 'holder = :holder',
        ExpressionAttributeValues: { ':holder': holder },
      }),
    ),
  );
}
