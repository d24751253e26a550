import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { dynamo } from '../aws';
import { tableName } from '../config';
import { instanceDetailSchema, type InstanceStatus } from '../schemas/instances';
import { newJobPut, type Job } from './jobs';
import { releaseCapacityItem, reserveCapacityItem, type CapacityPool } from './counters';

export const instanceItemSchema = instanceDetailSchema.extend({
  account_id: z.string(),
  /** The upstream server's numeric id, once created. */
  upstream_id: z.number().int().nullable(),
  /** True while this instance holds one IPv4 and one unit of its flavor's tier; released exactly once. */
  capacity_held: z.boolean(),
  deleted_at: z.string().nullable(),
  paused_by: z.enum(['user', 'billing']).nullable(),
  metered_until: z.string().nullable(),
  version: z.number().int(),
});
export type InstanceItem = z.infer<typeof instanceItemSchema>;

export class CapacityExhaustedError extends Error {
  override readonly name = 'CapacityExhaustedError';
  constructor(readonly pool: CapacityPool['kind']) {
    super(`${pool} capacity exhausted`);
  }
}

const poolsOf = (flavor: string): CapacityPool[] => [{ kind: 'ipv4' }, { kind: 'tier', flavor }];

/**
 * Writes a new instance and its provision job, reserving an IPv4 address and a unit of the flavor's tier, all in
 * one transaction: either everything is recorded or nothing is.
 */
export async function insertInstanceReservingCapacity(instance: InstanceItem, job: Job): Promise<void> {
  const pools = poolsOf(instance.plan.flavor);
  try {
    await dynamo().send(
      new TransactWriteCommand({
        TransactItems: [
          ...pools.map(reserveCapacityItem),
          {
            Put: {
              TableName: tableName('instances'),
              Item: instanceItemSchema.parse(instance),
              ConditionExpression: 'attribute_not_exists(instance_id)',
            },
          },
          newJobPut(job),
        ],
      }),
    );
  } catch (error) {
    if (error instanceof TransactionCanceledException) {
      const exhausted = pools.find((_, index) => error.CancellationReasons?.[index]?.Code === 'ConditionalCheckFailed');
      if (exhausted) throw new CapacityExhaustedError(exhausted.kind);
    }
    throw error;
  }
}

/** The instance as stored, deleted or not (workflows need to see deletions). */
export async function getInstanceItem(instanceId: number): Promise<InstanceItem | undefined> {
  const { Item } = await dynamo().send(
    new GetCommand({ TableName: tableName('instances'), Key: { instance_id: instanceId }, ConsistentRead: true }),
  );
  return Item ? instanceItemSchema.parse(Item) : undefined;
}

/** The caller's instance, or undefined when it is missing, someone else's, or deleted: all the same 404. */
export async function getOwnedInstance(instanceId: number, accountId: string): Promise<InstanceItem | undefined> {
  const item = await getInstanceItem(instanceId);
  return item && item.account_id === accountId && item.deleted_at === null ? item : undefined;
}

export async function listOwnedInstances(accountId: string): Promise<InstanceItem[]> {
  const items: InstanceItem[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await dynamo().send(
      new QueryCommand({
        TableName: tableName('instances'),
        IndexName: 'by_account',
        KeyConditionExpression: 'account_id = :account',
        FilterExpression: 'attribute_not_exists(deleted_at) OR deleted_at = :null',
        ExpressionAttributeValues: { ':account': accountId, ':null': null },
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...(page.Items ?? []).map((item) => instanceItemSchema.parse(item)));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

type Changes = Partial<Omit<InstanceItem, 'instance_id' | 'account_id' | 'version'>>;

function setExpression(changes: Changes) {
  const entries = Object.entries(changes);
  return {
    UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :v${i}`).join(', ')}, version = version + :one`,
    names: Object.fromEntries(entries.map(([key], i) => [`#f${i}`, key])),
    values: Object.fromEntries(entries.map(([, value], i) => [`:v${i}`, value])),
  };
}

/**
 * Moves a live instance from one of `from` to the given changes, conditionally, so that two workers can never
 * both win. Returns the updated item, or undefined when the instance was not in one of those states (or deleted).
 */
export async function transitionInstance(
  instanceId: number,
  from: readonly InstanceStatus[],
  changes: Changes,
): Promise<InstanceItem | undefined> {
  const { UpdateExpression, names, values } = setExpression(changes);
  const statusValues = Object.fromEntries(from.map((status, i) => [`:from${i}`, status]));
  try {
    const { Attributes } = await dynamo().send(
      new UpdateCommand({
        TableName: tableName('instances'),
        Key: { instance_id: instanceId },
        UpdateExpression,
        ConditionExpression: `#status IN (${Object.keys(statusValues).join(', ')}) AND (attribute_not_exists(deleted_at) OR deleted_at = :null)`,
        ExpressionAttributeNames: { ...names, '#status': 'status' },
        ExpressionAttributeValues: { ...values, ...statusValues, ':one': 1, ':null': null },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return instanceItemSchema.parse(Attributes);
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}

/**
 * Gives back the IPv4 address and tier unit an instance holds, together with the given changes, in one
 * transaction guarded by `capacity_held`: however often it is retried, capacity is released exactly once.
 * Returns false when there was nothing left to release.
 */
export async function releaseInstanceCapacity(
  instance: InstanceItem,
  changes: Changes,
  from?: readonly InstanceStatus[],
): Promise<boolean> {
  const { UpdateExpression, names, values } = setExpression({ ...changes, capacity_held: false });
  const statusValues = Object.fromEntries((from ?? []).map((status, i) => [`:from${i}`, status]));
  const statusCondition = from ? ` AND #status IN (${Object.keys(statusValues).join(', ')})` : '';
  try {
    await dynamo().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: tableName('instances'),
              Key: { instance_id: instance.instance_id },
              UpdateExpression,
              ConditionExpression: `capacity_held = :true${statusCondition}`,
              ExpressionAttributeNames: from ? { ...names, '#status': 'status' } : names,
              ExpressionAttributeValues: { ...values, ...statusValues, ':one': 1, ':true': true },
            },
          },
          ...poolsOf(instance.plan.flavor).map(releaseCapacityItem),
        ],
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof TransactionCanceledException && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') {
      return false;
    }
    throw error;
  }
}
