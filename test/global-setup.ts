import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

/** One DynamoDB Local for the whole run; test files isolate themselves by table prefix and data. */
export default async function setup(project: TestProject) {
  const dynamodb = await startDynamoDbLocal();
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  return async () => {
    await dynamodb.stop();
  };
}
