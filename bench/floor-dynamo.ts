import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

const newClient = () =>
  DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: process.env.AWS_REGION,
      ...(process.env.DYNAMODB_ENDPOINT
        ? { endpoint: process.env.DYNAMODB_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
        : {}),
    }),
  );
// Made on the first request, as the benchmark's server sets the environment only once the local runtime is up.
const clients: { dynamo?: ReturnType<typeof newClient> } = {};

/** The floors' DynamoDB document client, made with the AWS SDK alone (bench/sdk-floor-handler.ts, bench/stack-floor-handler.ts). */
export const floorDynamo = () => (clients.dynamo ??= newClient());
