import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';

/**
 * The floor for a function that talks to DynamoDB: the AWS SDK's DynamoDB client and one GetItem, nothing else.
 * Whatever a real function costs beyond this is ours.
 */
const client = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    region: process.env.AWS_REGION,
    ...(process.env.DYNAMODB_ENDPOINT
      ? { endpoint: process.env.DYNAMODB_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
  }),
);

export const handler = async () => {
  await client.send(new GetCommand({ TableName: process.env.ACCOUNTS_TABLE, Key: { account_id: 'floor' } }));
  return { statusCode: 200, body: 'ok' };
};
