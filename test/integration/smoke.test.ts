import { inject } from 'vitest';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS } from '../../shared/aws';

describe('global setup', () => {
  it('provides a reachable DynamoDB Local endpoint', async () => {
    const client = new DynamoDBClient({ endpoint: inject('dynamodbEndpoint'), region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    const result = await client.send(new ListTablesCommand({}));
    expect(Array.isArray(result.TableNames)).toBe(true);
    expect(process.version.startsWith('v24.')).toBe(true);
  });
});
