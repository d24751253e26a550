import {
  CreateTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  type AttributeDefinition,
} from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS } from '../../shared/aws';
import { tables, tableNames, type KeyDefinition, type TableDefinition, type TableName } from '../tables';

const keySchema = (partitionKey: KeyDefinition, sortKey?: KeyDefinition) => [
  { AttributeName: partitionKey.name, KeyType: 'HASH' as const },
  ...(sortKey ? [{ AttributeName: sortKey.name, KeyType: 'RANGE' as const }] : []),
];

/** Creates every table of `infra/tables.ts` in DynamoDB Local under the given names; existing ones are kept. */
export async function createLocalTables(endpoint: string, names: Record<TableName, string>): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  await Promise.all(
    tableNames.map(async (table) => {
      const definition: TableDefinition = tables[table];
      const indexes = definition.globalSecondaryIndexes ?? [];
      const keys = [definition.partitionKey, definition.sortKey, ...indexes.flatMap((i) => [i.partitionKey, i.sortKey])];
      const attributes = new Map<string, AttributeDefinition>();
      for (const key of keys) if (key) attributes.set(key.name, { AttributeName: key.name, AttributeType: key.type });
      try {
        await client.send(
          new CreateTableCommand({
            TableName: names[table],
            BillingMode: 'PAY_PER_REQUEST',
            AttributeDefinitions: [...attributes.values()],
            KeySchema: keySchema(definition.partitionKey, definition.sortKey),
            ...(indexes.length
              ? {
                  GlobalSecondaryIndexes: indexes.map((index) => ({
                    IndexName: index.indexName,
                    KeySchema: keySchema(index.partitionKey, index.sortKey),
                    Projection:
                      index.projection.type === 'INCLUDE'
                        ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.projection.attributes] }
                        : { ProjectionType: 'KEYS_ONLY' },
                  })),
                }
              : {}),
          }),
        );
        if (definition.timeToLiveAttribute) {
          await client.send(
            new UpdateTimeToLiveCommand({
              TableName: names[table],
              TimeToLiveSpecification: { AttributeName: definition.timeToLiveAttribute, Enabled: true },
            }),
          );
        }
      } catch (error) {
        if (!(error instanceof ResourceInUseException)) throw error;
      }
    }),
  );
  client.destroy();
}
