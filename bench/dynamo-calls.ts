import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Platform } from '../shared/platform';

/** One DynamoDB call as the client made it: which operation, and when it started and ended. */
export interface DynamoCall {
  readonly operation: string;
  /** The table addressed, when the call addresses one. */
  readonly table: string | undefined;
  /** Items written by a transaction (1 otherwise). */
  readonly items: number;
  /** Each operation on a table the call makes: itself, or each item of a transaction or batch read. */
  readonly touches: readonly { readonly operation: string; readonly table: string }[];
  readonly startedAt: number;
  readonly endedAt: number;
  /** The command's input as sent (marshalled), and whether the call failed (a refused condition included). */
  readonly input: Readonly<Record<string, unknown>>;
  readonly failed: boolean;
}

/**
 * Where DynamoDB calls are recorded, when whoever runs a handler asks for it (the benchmarks count round trips per
 * request this way, and tests check what a function touches, on the service's real client). The recording
 * middleware is added only here, so the deployed client carries none of it.
 */
const dynamoCallLog = new AsyncLocalStorage<DynamoCall[]>();

/** The IAM action behind each kind of transaction item. */
const transactItemOperations: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
};

/** The clients that record already (each runtime has its own). */
const installed = new WeakSet<DynamoDBDocumentClient>();

/**
 * Adds the recording middleware to a runtime's DynamoDB client, once: from then on recordDynamoCalls sees the calls
 * its work makes on that client.
 */
export function installDynamoCallRecorder(deps: Platform): void {
  const client = deps.dynamo;
  if (installed.has(client)) return;
  installed.add(client);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const calls = dynamoCallLog.getStore();
      if (!calls) return next(args);
      const startedAt = performance.now();
      let failed = true;
      try {
        const output = await next(args);
        failed = false;
        return output;
      } finally {
        const input = args.input as { TableName?: unknown; TransactItems?: Record<string, { TableName: string }>[]; RequestItems?: object };
        const operation = String(context.commandName).replace(/Command$/, '');
        const table = typeof input.TableName === 'string' ? input.TableName : undefined;
        calls.push({
          operation: String(context.commandName),
          table,
          items: input.TransactItems?.length ?? 1,
          touches: [
            ...(table ? [{ operation, table }] : []),
            ...(input.TransactItems ?? []).flatMap((item) =>
              Object.entries(item).map(([kind, { TableName }]) => ({ operation: transactItemOperations[kind] ?? kind, table: TableName })),
            ),
            ...Object.keys(input.RequestItems ?? {}).map((name) => ({ operation, table: name })),
          ],
          startedAt,
          endedAt: performance.now(),
          input: args.input as Record<string, unknown>,
          failed,
        });
      }
    },
    { step: 'initialize', name: 'recordDynamoCalls' },
  );
}

/** Runs `work` recording every DynamoDB call it makes (on a client with the recorder installed) into `calls`. */
export function recordDynamoCalls<T>(calls: DynamoCall[], work: () => T): T {
  return dynamoCallLog.run(calls, work);
}

/**
 * Each call's place in the longest chain of calls in which each started after the one before it had ended: the
 * sequential rounds the work waited through however its other calls overlapped (a read that outlasts the next
 * round's calls hides no round).
 */
export function callDepths(calls: readonly DynamoCall[]): Map<DynamoCall, number> {
  const ordered = [...calls].sort((a, b) => a.startedAt - b.startedAt);
  const depth = new Map<DynamoCall, number>();
  for (const call of ordered) {
    const before = ordered.filter((earlier) => earlier.endedAt <= call.startedAt).map((earlier) => depth.get(earlier) ?? 0);
    depth.set(call, 1 + Math.max(0, ...before));
  }
  return depth;
}

/** The sequential rounds of `calls` (see callDepths). */
export const sequentialRounds = (calls: readonly DynamoCall[]): number => Math.max(0, ...callDepths(calls).values());
