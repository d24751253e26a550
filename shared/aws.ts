import { AsyncLocalStorage } from 'node:async_hooks';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SFNClient } from '@aws-sdk/client-sfn';
import { config } from './config';
import { tracer } from './observability';

/** Static credentials for the local stand-ins, which accept any signature: no real secret is involved. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** Locally the endpoints are set; on AWS they are unset and the function role's credentials apply. */
function localOverrides(endpoint: string | undefined) {
  return endpoint ? { endpoint, credentials: LOCAL_CREDENTIALS } : {};
}

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
 * Where DynamoDB calls are recorded, when whoever runs a handler asks for it (the benchmarks count round trips
 * per request this way, on the real client). Outside such a scope the middleware only looks the store up.
 */
export const dynamoCallLog = new AsyncLocalStorage<DynamoCall[]>();

/** The IAM action behind each kind of transaction item. */
const transactItemOperations: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
};

function recordCalls(client: DynamoDBClient): DynamoDBClient {
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
  return client;
}

let documentClient: DynamoDBDocumentClient | undefined;
let sfnClient: SFNClient | undefined;

export function dynamo(): DynamoDBDocumentClient {
  documentClient ??= DynamoDBDocumentClient.from(
    tracer.captureAWSv3Client(recordCalls(new DynamoDBClient({ region: config().region, ...localOverrides(config().dynamodbEndpoint) }))),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  return documentClient;
}

export function sfn(): SFNClient {
  sfnClient ??= tracer.captureAWSv3Client(new SFNClient({ region: config().region, ...localOverrides(config().sfnEndpoint) }));
  return sfnClient;
}
