import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  QueryCommand,
  type BatchGetCommandOutput,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type QueryCommandInput,
  type UpdateCommandInput,
  type ScanCommandInput,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type * as z from 'zod';
import { dynamo } from '../aws';
import { hasTimeFor } from '../deadline';
import { isTransientFailure } from '../transient-errors';

/** Runs a conditional write; false when its condition did not hold (someone else got there first). */
export async function whenConditionHolds(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/** A conditional update answering with the item as it now is (ALL_NEW), or undefined when its condition failed. */
export async function updatedWhenConditionHolds(update: UpdateCommandInput): Promise<Record<string, unknown> | undefined> {
  try {
    return (await dynamo().send(new UpdateCommand({ ...update, ReturnValues: 'ALL_NEW' }))).Attributes;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}

/** Every item of a query or scan, all pages, each parsed with the entity's schema. */
export async function readAll<T extends z.ZodType>(
  input: ({ kind: 'query' } & QueryCommandInput) | ({ kind: 'scan' } & ScanCommandInput),
  schema: T,
): Promise<z.output<T>[]> {
  const { kind, ...params } = input;
  const items: z.output<T>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const command =
      kind === 'query'
        ? new QueryCommand({ ...params, ExclusiveStartKey: startKey })
        : new ScanCommand({ ...params, ExclusiveStartKey: startKey });
    const page = await dynamo().send(command);
    items.push(...(page.Items ?? []).map((item) => schema.parse(item)));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** BatchGetItem takes at most this many keys per call. */
const BATCH_GET_LIMIT = 100;

/**
 * The items with these keys, read consistently in batches, each parsed with the entity's schema; keys with no
 * item are left out. Keys DynamoDB leaves unprocessed are asked for again.
 */
export async function batchGetAll<T extends z.ZodType>(
  table: string,
  keys: readonly Record<string, unknown>[],
  schema: T,
): Promise<z.output<T>[]> {
  const items: z.output<T>[] = [];
  for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
    let pending: Record<string, unknown>[] | undefined = keys.slice(start, start + BATCH_GET_LIMIT);
    for (let attempt = 0; pending?.length; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * 25 * 2 ** Math.min(attempt, 6)));
      const output: BatchGetCommandOutput = await dynamo().send(
        new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }),
      );
      items.push(...(output.Responses?.[table] ?? []).map((item) => schema.parse(item)));
      pending = output.UnprocessedKeys?.[table]?.Keys;
    }
  }
  return items;
}

const CONFLICT_ATTEMPTS = 5;

/**
 * Tries of one store operation while DynamoDB fails transiently (connection, timeout, throttling, 5xx), after the
 * SDK's own attempts: pauses of up to 0.4, 0.8 and 1.6 s, jittered, ride out a blip of a few seconds. Longer
 * outages are the workflow's Retry to ride out, across invocations.
 */
const TRANSIENT_ATTEMPTS = 4;

/**
 * Runs a store operation again while it fails transiently, a bounded number of times and only while the invocation
 * has time for the pause. A cancelled transaction is passed on: what cancelled it is for its caller to judge.
 */
export async function rideOutTransient<T>(operation: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      const pauseMs = Math.random() * 200 * 2 ** attempt;
      const transient = isTransientFailure(error) && !(error instanceof TransactionCanceledException);
      if (!transient || attempt >= TRANSIENT_ATTEMPTS || !hasTimeFor(pauseMs)) throw error;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}

/**
 * A transaction that is retried, with jitter, when it only collided with another transaction on the same items
 * (DynamoDB cancels both rather than queue them, and the SDK does not retry that), and while DynamoDB fails
 * transiently. A failed condition is an answer, not a collision, and is passed on at once.
 */
export async function transactWrite(input: TransactWriteCommandInput): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    // One token for every send of this attempt: one that timed out after DynamoDB applied it is not applied twice.
    const once = { ...input, ClientRequestToken: input.ClientRequestToken ?? randomUUID() };
    try {
      await rideOutTransient(() => dynamo().send(new TransactWriteCommand(once)));
      return;
    } catch (error) {
      const reasons = error instanceof TransactionCanceledException ? (error.CancellationReasons ?? []) : [];
      const collidedOnly =
        reasons.some((r) => r.Code === 'TransactionConflict') && !reasons.some((r) => r.Code === 'ConditionalCheckFailed');
      if (!collidedOnly || attempt >= CONFLICT_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 25 * 2 ** attempt));
    }
  }
}
