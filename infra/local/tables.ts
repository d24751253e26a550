import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  type AttributeDefinition,
} from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS } from '../../shared/aws';
import { tables, tableNames, type KeyDefinition, type TableDefinition, type TableName } from '../../shared/tables';

const keySchema = (partitionKey: KeyDefinition, sortKey?: KeyDefinition) => [
  { AttributeName: partitionKey.name, KeyType: 'HASH' as const },
  ...(sortKey ? [{ AttributeName: sortKey.name, KeyType: 'RANGE' as const }] : []),
];

/** A table kept from an earlier run (`--data-dir`) may predate its stream. */
async function enableStream(client: DynamoDBClient, table: string): Promise<void> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
  if (Table?.StreamSpecification?.StreamEnabled) return;
  await client.send(
    new UpdateTableCommand({ TableName: table, StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } }),
  );
}

type IndexDefinition = NonNullable<TableDefinition['globalSecondaryIndexes']>[number];

const indexSpec = (index: IndexDefinition) => ({
  IndexName: index.indexName,
  KeySchema: keySchema(index.partitionKey, index.sortKey),
  Projection:
    index.projection.type === 'INCLUDE'
      ? { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...index.projection.attributes] }
      : { ProjectionType: 'KEYS_ONLY' as const },
});

/** A table kept from an earlier start gets the indexes added since, as a deploy adds them on AWS. */
async function addMissingIndexes(
  client: DynamoDBClient,
  table: string,
  indexes: readonly IndexDefinition[],
  attributes: AttributeDefinition[],
): Promise<void> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
  const present = new Set((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
  for (const index of indexes.filter((candidate) => !present.has(candidate.indexName))) {
    await client.send(
      new UpdateTableCommand({
        TableName: table,
        AttributeDefinitions: attributes,
        GlobalSecondaryIndexUpdates: [{ Create: indexSpec(index) }],
      }),
    );
  }
}

/** Creates every table of `shared/tables.ts` in DynamoDB Local under the given names; existing ones are kept. */
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
                  GlobalSecondaryIndexes: indexes.map(indexSpec),
                }
              : {}),
            ...(definition.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } } : {}),
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
        if (definition.stream) await enableStream(client, names[table]);
        await addMissingIndexes(client, names[table], indexes, [...attributes.values()]);
      }
    }),
  );
  client.destroy();
}
