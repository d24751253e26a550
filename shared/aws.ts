import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { Config } from './config';
import { tracer } from './observability';

/** Static credentials for the local stand-ins, which accept any signature: no real secret is involved. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** Locally the endpoints are set; on AWS they are unset and the function role's credentials apply. */
function localOverrides(endpoint: string | undefined) {
  return endpoint ? { endpoint, credentials: LOCAL_CREDENTIALS } : {};
}

export function dynamoClient(config: Config): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(
    tracer.captureAWSv3Client(new DynamoDBClient({ region: config.region, ...localOverrides(config.dynamodbEndpoint) })),
    { marshallOptions: { removeUndefinedValues: true } },
  );
}

export function sfnClient(config: Config): SFNClient {
  return tracer.captureAWSv3Client(new SFNClient({ region: config.region, ...localOverrides(config.sfnEndpoint) }));
}
