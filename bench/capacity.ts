import { AsyncLocalStorage } from 'node:async_hooks';
import type { ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Platform } from '../shared/platform';

/** What a piece of work cost DynamoDB, as DynamoDB itself reports it (`ReturnConsumedCapacity`). */
export interface CapacityTally {
  calls: number;
  readUnits: number;
  writeUnits: number;
  /** Calls by operation, e.g. { Query: 16, BatchGetItem: 4 }. */
  operations: Record<string, number>;
}

const READ_OPERATIONS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems']);
const tallies = new AsyncLocalStorage<CapacityTally>();
/** The clients that tally already (each runtime has its own). */
const installed = new WeakSet<DynamoDBDocumentClient>();

const unitsOf = (consumed: ConsumedCapacity | ConsumedCapacity[] | undefined) =>
  [consumed ?? []].flat().reduce((sum, entry) => sum + (entry.CapacityUnits ?? 0), 0);

/** Asks DynamoDB for the capacity of every call made on the service's client and adds it to the current tally. */
function install(client: DynamoDBDocumentClient): void {
  if (installed.has(client)) return;
  installed.add(client);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const tally = tallies.getStore();
      if (!tally) return next(args);
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      const output = await next(args);
      const operation = String(context.commandName).replace(/Command$/, '');
      const units = unitsOf((output.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }).ConsumedCapacity);
      tally.calls += 1;
      tally.operations[operation] = (tally.operations[operation] ?? 0) + 1;
      if (READ_OPERATIONS.has(operation)) tally.readUnits += units;
      else tally.writeUnits += units;
      return output;
    },
    { step: 'initialize', name: 'tallyConsumedCapacity' },
  );
}

/** Runs `work` and returns what its DynamoDB calls on the runtime's client consumed, with its wall time. */
export async function measure<T>(deps: Platform, work: () => Promise<T>): Promise<{ result: T; tally: CapacityTally; ms: number }> {
  install(deps.dynamo);
  const tally: CapacityTally = { calls: 0, readUnits: 0, writeUnits: 0, operations: {} };
  const started = performance.now();
  const result = await tallies.run(tally, work);
  return { result, tally, ms: performance.now() - started };
}
