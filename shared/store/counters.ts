import { runtimeSlot, type Platform, tableName } from '../platform';
import { randomInt } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from '../model/zod';
import { TTL_ATTRIBUTE } from '../tables';
import { batchGetAll, transactWrite, whenConditionHolds } from './dynamo-helpers';
import { retry, retryPolicies, TRY_AGAIN } from '../retry';
import { CAPACITY_SHARDS, capacityShares, type CapacityPool, type CapacityShard, type CapacityUnit } from '../model/capacity';

/** Ids are reserved this many at a time, so that most creates pay no round trip for their id. */
const SEQUENCE_BLOCK = 20;
const reservedBlocks = runtimeSlot(() => new Map<string, { next: number; last: number }>());

/**
 * Next value of an integer sequence (instance ids, key ids). Each process reserves a block of values with one
 * atomic ADD and hands them out in order: values are unique, increasing within a process, and may skip a few
 * where a process ends with part of its block unused.
 */
export async function nextSequenceValue(
  deps: Platform,
  sequence: 'instance_id' | 'api_key_id',
  abortSignal?: AbortSignal,
): Promise<number> {
  const block = reservedBlocks.of(deps).get(sequence);
  if (block && block.next <= block.last) return block.next++;
  const { Attributes } = await deps.dynamo.send(
    new UpdateCommand({
      TableName: tableName(deps, 'counters'),
      Key: { name: `seq#${sequence}` },
      UpdateExpression: 'ADD #value :block',
      ExpressionAttributeNames: { '#value': 'value' },
      ExpressionAttributeValues: { ':block': SEQUENCE_BLOCK },
      ReturnValues: 'UPDATED_NEW',
    }),
    { abortSignal },
  );
  const last = z.object({ value: z.number().int() }).parse(Attributes).value;
  const first = last - SEQUENCE_BLOCK + 1;
  reservedBlocks.of(deps).set(sequence, { next: first + 1, last });
  return first;
}

export interface SlidingWindowHit {
  readonly allowed: boolean;
  /** The window's entries, newest first (this request's own first when allowed). */
  readonly newestFirst: readonly number[];
  /** This request's entry (in the window only when allowed). */
  readonly entry: number;
}

const entriesSchema = z.object({ times: z.array(z.number()).default([]) });

/**
 * Counts one request in a sliding window kept as one item: the accepted requests' entries, newest first. One
 * conditional write either way: the new entry goes in front on condition that fewer than `limit` are stored or the
 * `limit`-th newest is out of the window; a refusal hands back the entries as they are. Entries past the `limit`-th
 * can never decide anything; once they are as many again, they are trimmed.
 */
export async function hitSlidingWindow(
  deps: Platform,
  name: string,
  limit: number,
  windowMs: number,
  nowMs: number,
): Promise<SlidingWindowHit> {
  const entry = nowMs * 1000 + randomInt(1000);
  try {
    const { Attributes } = await deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'counters'),
        Key: { name },
        UpdateExpression: 'SET #times = list_append(:entry, if_not_exists(#times, :empty)), #ttl = :ttl',
        ConditionExpression: `attribute_not_exists(#times) OR size(#times) < :limit OR #times[${limit - 1}] < :cutoff`,
        ExpressionAttributeNames: { '#times': 'times', '#ttl': TTL_ATTRIBUTE },
        ExpressionAttributeValues: {
          ':entry': [entry],
          ':empty': [],
          ':limit': limit,
          ':cutoff': (nowMs - windowMs + 1) * 1000,
          ':ttl': Math.ceil((nowMs + windowMs) / 1000) + 60,
        },
        ReturnValues: 'UPDATED_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    const { times } = entriesSchema.parse(Attributes);
    if (times.length >= 2 * limit) await trimSlidingWindow(deps, name, limit, times.length);
    return { allowed: true, newestFirst: times, entry };
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      return { allowed: false, newestFirst: entriesSchema.parse(error.Item ? unmarshall(error.Item) : {}).times, entry };
    }
    throw error;
  }
}

/** Sets a mark that holds until `untilSeconds` (epoch seconds), or moves its end there. */
export async function setMark(deps: Platform, name: string, untilSeconds: number): Promise<void> {
  await deps.dynamo.send(
    new UpdateCommand({
      TableName: tableName(deps, 'counters'),
      Key: { name },
      UpdateExpression: 'SET #ttl = :until',
      ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE },
      ExpressionAttributeValues: { ':until': untilSeconds },
    }),
  );
}

/** Whether a mark holds at `nowMs`: DynamoDB deletes expired items only some time after they expire. */
export async function markHolds(deps: Platform, name: string, nowMs: number): Promise<boolean> {
  const { Item } = await deps.dynamo.send(new GetCommand({ TableName: tableName(deps, 'counters'), Key: { name }, ConsistentRead: true }));
  const until = z.object({ [TTL_ATTRIBUTE]: z.number().optional() }).parse(Item ?? {})[TTL_ATTRIBUTE];
  return until !== undefined && until * 1000 > nowMs;
}

/**
 * Drops the entries past the `limit`-th. Newer entries only ever go in front, so whatever sits at those positions
 * now is past the `limit`-th whatever else happened meanwhile: no condition is needed.
 */
/** Empties a sliding window: what it counted no longer counts (an operator's decision, after looking). */
export async function clearSlidingWindow(deps: Platform, name: string): Promise<void> {
  await deps.dynamo.send(
    new UpdateCommand({
      TableName: tableName(deps, 'counters'),
      Key: { name },
      UpdateExpression: 'REMOVE #times',
      ExpressionAttributeNames: { '#times': 'times' },
    }),
  );
}

async function trimSlidingWindow(deps: Platform, name: string, limit: number, length: number): Promise<void> {
  const positions = Array.from({ length: length - limit }, (_, i) => `#times[${limit + i}]`);
  await deps.dynamo
    .send(
      new UpdateCommand({
        TableName: tableName(deps, 'counters'),
        Key: { name },
        UpdateExpression: `REMOVE ${positions.join(', ')}`,
        ConditionExpression: 'attribute_exists(#times)',
        ExpressionAttributeNames: { '#times': 'times' },
      }),
    )
    .catch((error: unknown) => {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    });
}

/** Takes one request's entry back out of a window (it was counted, then refused or not carried out). */
export async function giveBackSlidingWindow(deps: Platform, name: string, entry: number): Promise<void> {
  await retry(
    retryPolicies.requestVersionConflict,
    async () => {
      const { Item } = await deps.dynamo.send(
        new GetCommand({ TableName: tableName(deps, 'counters'), Key: { name }, ConsistentRead: true }),
      );
      const position = entriesSchema.parse(Item ?? {}).times.indexOf(entry);
      if (position < 0) return;
      // Conditional on the entry still being there: a newer one in front shifts it, and then we look again.
      const removed = await whenConditionHolds(
        deps.dynamo.send(
          new UpdateCommand({
            TableName: tableName(deps, 'counters'),
            Key: { name },
            UpdateExpression: `REMOVE #times[${position}]`,
            ConditionExpression: `#times[${position}] = :entry`,
            ExpressionAttributeNames: { '#times': 'times' },
            ExpressionAttributeValues: { ':entry': entry },
          }),
        ),
      );
      return removed ? undefined : TRY_AGAIN;
    },
    {
      exhausted: () => {
        throw new Error(`could not give back an entry of ${name}: the window kept changing`);
      },
    },
  );
}

/** The pool's single counter item of before sharding: it only takes units back (from instances that hold one of it). */
function capacityCounterName(pool: CapacityPool): string {
  return pool.kind === 'ipv4' ? 'capacity#ipv4' : `capacity#tier#${pool.flavor}`;
}

/** The counter item a unit lives on: `capacity#ipv4#3`, `capacity#tier#s-1vcpu-2gb#0`, or the old single item. */
export function capacityShardName(pool: CapacityPool, shard: CapacityShard): string {
  return shard === null ? capacityCounterName(pool) : `${capacityCounterName(pool)}#${shard}`;
}

function defaultLimit(deps: Platform, pool: CapacityPool): number {
  return pool.kind === 'ipv4' ? deps.config.defaultIpv4PoolSize : deps.config.defaultTierCapacity;
}

/** A shard's share of the configured default limit, for shards no operator has sized. */
function defaultShare(deps: Platform, pool: CapacityPool, shard: number): number {
  return capacityShares(defaultLimit(deps, pool))[shard]!;
}

/**
 * A transaction item that takes one unit from one shard of a pool, refused (ConditionalCheckFailed) when that shard
 * is full. The shard's limit lives on its item when an operator set one, and is its share of the configured default
 * otherwise.
 */
export function reserveCapacityItem(deps: Platform, pool: CapacityPool, shard: number) {
  return {
    Update: {
      TableName: tableName(deps, 'counters'),
      Key: { name: capacityShardName(pool, shard) },
      UpdateExpression: 'ADD #used :one',
      ConditionExpression:
        '(attribute_not_exists(#limit) AND (attribute_not_exists(#used) OR #used < :default)) OR (attribute_exists(#limit) AND ((attribute_not_exists(#used) AND #limit > :zero) OR #used < #limit))',
      ExpressionAttributeNames: { '#used': 'used', '#limit': 'limit' },
      ExpressionAttributeValues: { ':one': 1, ':zero': 0, ':default': defaultShare(deps, pool, shard) },
    },
  };
}

/** A transaction item that gives one unit back to the item it was taken from (a shard, or the old single item). */
export function releaseCapacityItem(deps: Platform, unit: CapacityUnit) {
  return {
    Update: {
      TableName: tableName(deps, 'counters'),
      Key: { name: capacityShardName(unit.pool, unit.shard) },
      UpdateExpression: 'ADD #used :minusOne',
      ConditionExpression: '#used > :zero',
      ExpressionAttributeNames: { '#used': 'used' },
      ExpressionAttributeValues: { ':minusOne': -1, ':zero': 0 },
    },
  };
}

/**
 * Sets a pool's size (operators): every shard's share, in one transaction, so no reader sees a pool half resized.
 * Units already in use stay in use (a shard holding more than its new share takes none until it is below it).
 */
export async function setCapacityLimit(deps: Platform, pool: CapacityPool, limit: number): Promise<void> {
  const shares = capacityShares(limit);
  await transactWrite(deps, {
    TransactItems: shares.map((share, shard) => ({
      Update: {
        TableName: tableName(deps, 'counters'),
        Key: { name: capacityShardName(pool, shard) },
        UpdateExpression: 'SET #limit = :limit',
        ExpressionAttributeNames: { '#limit': 'limit' },
        ExpressionAttributeValues: { ':limit': share },
      },
    })),
  });
}

export interface ShardCapacity {
  readonly shard: CapacityShard;
  /** The item's name in the counters table. */
  readonly counter: string;
  /** The shard's share of the limit (null for the old single item, which takes no new units). */
  readonly limit: number | null;
  readonly used: number;
}

const counterItemSchema = z.object({ name: z.string(), limit: z.number().optional(), used: z.number().optional() });

/** Every counter item of a pool as stored: its shards, then the old single item. */
export async function readCapacityShards(deps: Platform, pool: CapacityPool): Promise<ShardCapacity[]> {
  const shards: CapacityShard[] = [...Array.from({ length: CAPACITY_SHARDS }, (_, shard) => shard), null];
  const items = await batchGetAll(
    deps,
    tableName(deps, 'counters'),
    shards.map((shard) => ({ name: capacityShardName(pool, shard) })),
    counterItemSchema,
  );
  const byName = new Map(items.map((item) => [item.name, item]));
  return shards.map((shard) => {
    const counter = capacityShardName(pool, shard);
    const item = byName.get(counter);
    return {
      shard,
      counter,
      limit: shard === null ? null : (item?.limit ?? defaultShare(deps, pool, shard)),
      used: item?.used ?? 0,
    };
  });
}

/**
 * A pool's size and the units in use, summed over its shards (each shard's share of the configured default when no
 * limit was set); units still held on the old single item count as in use.
 */
export async function readCapacity(deps: Platform, pool: CapacityPool): Promise<{ limit: number; used: number }> {
  const shards = await readCapacityShards(deps, pool);
  return {
    limit: shards.reduce((sum, shard) => sum + (shard.limit ?? 0), 0),
    used: shards.reduce((sum, shard) => sum + shard.used, 0),
  };
}

/**
 * Moves a limit an operator set on a pool's old single item (before sharding) onto its shards, as their shares,
 * in one transaction that also removes it from the old item: `moved`. When an operator has sized the shards since,
 * theirs stands and the old limit is only removed: `dropped`. `none` when the old item has no limit.
 */
export async function moveLimitToShards(deps: Platform, pool: CapacityPool): Promise<'moved' | 'dropped' | 'none'> {
  const names = [capacityCounterName(pool), ...Array.from({ length: CAPACITY_SHARDS }, (_, shard) => capacityShardName(pool, shard))];
  const items = await batchGetAll(
    deps,
    tableName(deps, 'counters'),
    names.map((name) => ({ name })),
    counterItemSchema,
  );
  const old = items.find((item) => item.name === capacityCounterName(pool));
  if (old?.limit === undefined) return 'none';
  const sized = items.some((item) => item.name !== old.name && item.limit !== undefined);
  const dropOld = {
    Update: {
      TableName: tableName(deps, 'counters'),
      Key: { name: old.name },
      UpdateExpression: 'REMOVE #limit',
      ConditionExpression: '#limit = :old',
      ExpressionAttributeNames: { '#limit': 'limit' },
      ExpressionAttributeValues: { ':old': old.limit },
    },
  };
  const shares = sized
    ? []
    : capacityShares(old.limit).map((share, shard) => ({
        Update: {
          TableName: tableName(deps, 'counters'),
          Key: { name: capacityShardName(pool, shard) },
          UpdateExpression: 'SET #limit = :limit',
          ConditionExpression: 'attribute_not_exists(#limit)',
          ExpressionAttributeNames: { '#limit': 'limit' },
          ExpressionAttributeValues: { ':limit': share },
        },
      }));
  await transactWrite(deps, { TransactItems: [...shares, dropOld] });
  return sized ? 'dropped' : 'moved';
}

/**
 * Per-account counts of what is limited (webhook endpoints, active API keys), one counters item each: the transaction
 * item that takes one place, refused once `limit` are taken, and the one that gives a place back.
 */
export function takeCountedPlace(deps: Platform, name: string, limit: number) {
  return {
    Update: {
      TableName: tableName(deps, 'counters'),
      Key: { name },
      UpdateExpression: 'ADD #count :one',
      ConditionExpression: 'attribute_not_exists(#count) OR #count < :limit',
      ExpressionAttributeNames: { '#count': 'count' },
      ExpressionAttributeValues: { ':one': 1, ':limit': limit },
    },
  };
}

export function giveBackCountedPlace(deps: Platform, name: string) {
  return {
    Update: {
      TableName: tableName(deps, 'counters'),
      Key: { name },
      UpdateExpression: 'ADD #count :minusOne',
      ConditionExpression: '#count > :zero',
      ExpressionAttributeNames: { '#count': 'count' },
      ExpressionAttributeValues: { ':minusOne': -1, ':zero': 0 },
    },
  };
}
