import { inject } from 'vitest';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { localCredentials } from '../../infra/local/credentials';

describe('global setup', () => {
  it('provides a reachable DynamoDB Local endpoint', async () => {
    const client = new DynamoDBClient({ endpoint: inject('dynamodbEndpoint'), region: 'us-east-1', credentials: localCredentials });
    const result = await client.send(new ListTablesCommand({}));
    expect(Array.isArray(result.TableNames)).toBe(true);
    expect(process.version.startsWith('v24.')).toBe(true);
  });
});
