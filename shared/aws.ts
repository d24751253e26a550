import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Config } from './config';
import { tracer } from './observability';

/** Static credentials for the local stand-ins, which accept any signature: no real secret is involved. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** Locally the endpoints are set; on AWS they are unset and the function role's credentials apply. */
export function localOverrides(endpoint: string | undefined) {
  return endpoint ? { endpoint, credentials: LOCAL_CREDENTIALS } : {};
}

export function dynamoClient(config: Config): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(
    tracer.captureAWSv3Client(new DynamoDBClient({ region: config.region, ...localOverrides(config.dynamodbEndpoint) })),
    { marshallOptions: { removeUndefinedValues: true } },
  );
}

/** A dependency the function's bundle left out (see shared/bundle-flags.d.ts): its access does not declare it. */
export const notBundled = (dependency: string) =>
  new Error(`${dependency} is not in this function's bundle: the function's declared access (shared/access.ts) does not use it`);

/** The Secrets Manager SDK, loaded for the one read of a secret: only functions that read one bundle it. */
export async function loadSecretsManager(): Promise<typeof import('@aws-sdk/client-secrets-manager')> {
  if (typeof __BUNDLES_SECRETS_MANAGER__ === 'undefined' || __BUNDLES_SECRETS_MANAGER__) return import('@aws-sdk/client-secrets-manager');
  throw notBundled('Secrets Manager');
}
