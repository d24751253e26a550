import type { Platform } from '../platform';
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
import { hasTimeFor } from '../deadline';
import { retry, retryPolicies, TRY_AGAIN } from '../retry';
import { DependencyTransientError, isTransientFailure } from '../transient-errors';

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
export async function updatedWhenConditionHolds(deps: Platform, update: UpdateCommandInput): Promise<Record<string, unknown> | undefined> {
  try {
    return (await deps.dynamo.send(new UpdateCommand({ ...update, ReturnValues: 'ALL_NEW' }))).Attributes;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}

/** Every item of a query or scan, all pages, each parsed with the entity's schema. */
export async function readAll<T extends z.ZodType>(
  deps: Platform,
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
    const page = await deps.dynamo.send(command);
    items.push(...(page.Items ?? []).map((item) => schema.parse(item)));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** BatchGetItem takes at most this many keys per call. */
const BATCH_GET_LIMIT = 100;

/**
 * The items with these keys, read in batches (consistently unless told otherwise), each parsed with the entity's
 * schema; keys with no item are left out. Keys DynamoDB leaves unprocessed are asked for again.
 */
export async function batchGetAll<T extends z.ZodType>(
  deps: Platform,
  table: string,
  keys: readonly Record<string, unknown>[],
  schema: T,
  consistent = true,
): Promise<z.output<T>[]> {
  const items: z.output<T>[] = [];
  for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
    let pending: Record<string, unknown>[] = keys.slice(start, start + BATCH_GET_LIMIT);
    await retry(
      retryPolicies.unprocessedKeys,
      async () => {
        const output: BatchGetCommandOutput = await deps.dynamo.send(
          new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: consistent } } }),
        );
        items.push(...(output.Responses?.[table] ?? []).map((item) => schema.parse(item)));
        pending = output.UnprocessedKeys?.[table]?.Keys ?? [];
        return pending.length > 0 ? TRY_AGAIN : undefined;
      },
      {
        exhausted: () => {
          throw new DependencyTransientError(`DynamoDB left ${pending.length} key(s) of ${table} unprocessed`);
        },
      },
    );
  }
  return items;
}

/**
 * Runs a store operation again while DynamoDB fails transiently (connection, timeout, throttling, 5xx) after the SDK's
 * own attempts, under the `dynamoTransient` policy and only while the invocation has time for the pause; longer
 * outages are the workflow's Retry to ride out, across invocations. A cancelled transaction is passed on: what
 * cancelled it is for its caller to judge.
 */
export function rideOutTransient<T>(deps: Platform, operation: () => Promise<T>): Promise<T> {
  return retry(retryPolicies.dynamoTransient, operation, {
    retryable: (error) => isTransientFailure(error) && !(error instanceof TransactionCanceledException),
    canPause: (ms) => hasTimeFor(deps, ms),
  });
}

/**
 * A transaction that is retried under the `transactionConflict` policy when it only collided with another
 * transaction on the same items (DynamoDB cancels both rather than queue them, and the SDK does not retry that), and
 * while DynamoDB fails transiently. A failed condition is an answer, not a collision, and is passed on at once.
 */
export async function transactWrite(deps: Platform, input: TransactWriteCommandInput): Promise<void> {
  await retry(
    retryPolicies.transactionConflict,
    async () => {
      // One token for every send of this attempt: one that timed out after DynamoDB applied it is not applied twice.
      const once = { ...input, ClientRequestToken: input.ClientRequestToken ?? deps.ids.uuid() };
      await rideOutTransient(deps, () => deps.dynamo.send(new TransactWriteCommand(once)));
    },
    { retryable: collidedOnly },
  );
}

function collidedOnly(error: unknown): boolean {
  const reasons = error instanceof TransactionCanceledException ? (error.CancellationReasons ?? []) : [];
  return reasons.some((r) => r.Code === 'TransactionConflict') && !reasons.some((r) => r.Code === 'ConditionalCheckFailed');
}
