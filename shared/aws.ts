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

let documentClient: DynamoDBDocumentClient | undefined;
let sfnClient: SFNClient | undefined;

export function dynamo(): DynamoDBDocumentClient {
  documentClient ??= DynamoDBDocumentClient.from(
    tracer.captureAWSv3Client(new DynamoDBClient({ region: config().region, ...localOverrides(config().dynamodbEndpoint) })),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  return documentClient;
}

export function sfn(): SFNClient {
  sfnClient ??= tracer.captureAWSv3Client(new SFNClient({ region: config().region, ...localOverrides(config().sfnEndpoint) }));
  return sfnClient;
}
