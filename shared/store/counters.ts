import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from 'zod';
import { dynamo } from '../aws';
import { config, tableName } from '../config';
import { TTL_ATTRIBUTE } from '../../infra/tables';
import { whenConditionHolds } from './dynamo-helpers';

/** Ids are reserved this many at a time, so that most creates pay no round trip for their id. */
const SEQUENCE_BLOCK = 20;
const reservedBlocks = new Map<string, { next: number; last: number }>();

/**
 * Next value of an integer sequence (instance ids, key ids). Each process reserves a block of values with one
 * atomic ADD and hands them out in order: values are unique, increasing within a process, and may skip a few
 * where a process ends with part of its block unused.
 */
export async function nextSequenceValue(sequence: 'instance_id' | 'api_key_id'): Promise<number> {
  const block = reservedBlocks.get(sequence);
  if (block && block.next <= block.last) return block.next++;
  const { Attributes } = await dynamo().send(
    new UpdateCommand({
      TableName: tableName('counters'),
      Key: { name: `seq#${sequence}` },
      UpdateExpression: 'ADD #value :block',
      ExpressionAttributeNames: { '#value': 'value' },
      ExpressionAttributeValues: { ':block': SEQUENCE_BLOCK },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  const last = z.object({ value: z.number().int() }).parse(Attributes).value;
  const first = last - SEQUENCE_BLOCK + 1;
  reservedBlocks.set(sequence, { next: first + 1, last });
  return first;
}

export interface WindowHit {
  readonly allowed: boolean;
  /** Requests counted in the window after this one (or the full count when refused). */
  readonly count: number;
}

/**
 * Counts one request in a fixed window, refusing it (without counting) once the limit is reached. One round trip
 * either way: the failed condition returns the current count.
 */
export async function hitWindow(name: string, limit: number, windowEndsAtSeconds: number): Promise<WindowHit> {
  try {
    const { Attributes } = await dynamo().send(
      new UpdateCommand({
        TableName: tableName('counters'),
        Key: { name },
        UpdateExpression: 'ADD #count :one SET #ttl = if_not_exists(#ttl, :ttl)',
        ConditionExpression: 'attribute_not_exists(#count) OR #count < :limit',
        ExpressionAttributeNames: { '#count': 'count', '#ttl': TTL_ATTRIBUTE },
        ExpressionAttributeValues: { ':one': 1, ':limit': limit, ':ttl': windowEndsAtSeconds + 60 },
        ReturnValues: 'UPDATED_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { allowed: true, count: z.object({ count: z.number().int() }).parse(Attributes).count };
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      const count = z.object({ count: z.number().int() }).safeParse(error.Item ? unmarshall(error.Item) : {});
      return { allowed: false, count: count.success ? count.data.count : limit };
    }
    throw error;
  }
}

/** Returns one request to a window (it was counted, then refused elsewhere). */
export async function giveBackWindow(name: string): Promise<void> {
  await whenConditionHolds(
    dynamo().send(
      new UpdateCommand({
        TableName: tableName('counters'),
        Key: { name },
        UpdateExpression: 'ADD #count :minusOne',
        ConditionExpression: '#count > :zero',
        ExpressionAttributeNames: { '#count': 'count' },
        ExpressionAttributeValues: { ':minusOne': -1, ':zero': 0 },
      }),
    ),
  );
}

export type CapacityPool = { kind: 'ipv4' } | { kind: 'tier'; flavor: string };

export function capacityCounterName(pool: CapacityPool): string {
  return pool.kind === 'ipv4' ? 'capacity#ipv4' : `capacity#tier#${pool.flavor}`;
}

function defaultLimit(pool: CapacityPool): number {
  return pool.kind === 'ipv4' ? config().defaultIpv4PoolSize : config().defaultTierCapacity;
}

/**
 * Transaction items that take one unit from a pool (refused when the pool is full) or give one back. The limit
 * lives on the counter item when an operator set one, and falls back to the configured default otherwise.
 */
export function reserveCapacityItem(pool: CapacityPool) {
  return {
    Update: {
      TableName: tableName('counters'),
      Key: { name: capacityCounterName(pool) },
      UpdateExpression: 'ADD #used :one',
      ConditionExpression:
        '(attribute_not_exists(#limit) AND (attribute_not_exists(#used) OR #used < :default)) OR (attribute_exists(#limit) AND ((attribute_not_exists(#used) AND #limit > :zero) OR #used < #limit))',
      ExpressionAttributeNames: { '#used': 'used', '#limit': 'limit' },
      ExpressionAttributeValues: { ':one': 1, ':zero': 0, ':default': defaultLimit(pool) },
    },
  };
}

export function releaseCapacityItem(pool: CapacityPool) {
  return {
    Update: {
      TableName: tableName('counters'),
      Key: { name: capacityCounterName(pool) },
      UpdateExpression: 'ADD #used :minusOne',
      ConditionExpression: '#used > :zero',
      ExpressionAttributeNames: { '#used': 'used' },
      ExpressionAttributeValues: { ':minusOne': -1, ':zero': 0 },
    },
  };
}

/** Sets a pool's size (operators); units already in use stay in use. */
export async function setCapacityLimit(pool: CapacityPool, limit: number): Promise<void> {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new Error('a capacity limit is a non-negative integer');
  await dynamo().send(
    new UpdateCommand({
      TableName: tableName('counters'),
      Key: { name: capacityCounterName(pool) },
      UpdateExpression: 'SET #limit = :limit',
      ExpressionAttributeNames: { '#limit': 'limit' },
      ExpressionAttributeValues: { ':limit': limit },
    }),
  );
}

/** A pool's size and the units in use, as the counter holds them (the configured default when no limit was set). */
export async function readCapacity(pool: CapacityPool): Promise<{ limit: number; used: number }> {
  const { Item } = await dynamo().send(new GetCommand({ TableName: tableName('counters'), Key: { name: capacityCounterName(pool) }, ConsistentRead: true }));
  return { limit: typeof Item?.limit === 'number' ? Item.limit : defaultLimit(pool), used: typeof Item?.used === 'number' ? Item.used : 0 };
}
