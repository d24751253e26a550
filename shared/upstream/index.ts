import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { config } from '../config';
import { DigitalOceanDriver } from './digitalocean';
import type { UpstreamDriver } from './driver';

let driver: Promise<UpstreamDriver> | undefined;

/** The upstream token: given directly in the local runtime, read once from Secrets Manager on AWS. */
async function upstreamToken(): Promise<string> {
  const { token, tokenSecretArn } = config().upstream;
  if (token) return token;
  if (!tokenSecretArn) throw new Error('neither UPSTREAM_TOKEN nor UPSTREAM_TOKEN_SECRET_ARN is set');
  const secrets = new SecretsManagerClient({ region: config().region });
  const { SecretString } = await secrets.send(new GetSecretValueCommand({ SecretId: tokenSecretArn }));
  if (!SecretString) throw new Error('the upstream token secret is empty');
  return SecretString;
}

export function upstream(): Promise<UpstreamDriver> {
  driver ??= upstreamToken().then(
    (token) => new DigitalOceanDriver({ baseUrl: config().upstream.baseUrl, token, timeoutMs: config().upstream.timeoutMs }),
  );
  driver.catch(() => (driver = undefined));
  return driver;
}
