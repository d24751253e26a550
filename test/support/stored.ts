import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { LocalRuntime } from '../../infra/local/runtime';

/** Every item of every table of the runtime, as one text to search for what must not be stored in clear. */
export async function everythingStored(runtime: Pick<LocalRuntime, 'deps' | 'tableNames'>): Promise<string> {
  const items: unknown[] = [];
  for (const table of Object.values(runtime.tableNames)) {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await runtime.deps.dynamo.send(new ScanCommand({ TableName: table, ExclusiveStartKey: startKey }));
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }
  return JSON.stringify(items);
}
