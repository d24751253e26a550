import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/** The canary's API key, read from its secret on every run: a key put by the operator is used at the next run. */
export async function readApiKey(secretArn: string | undefined): Promise<string> {
  if (!secretArn) throw new Error('CANARY_KEY_SECRET_ARN is not set');
  const { SecretString } = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: secretArn }));
  const key = SecretString?.trim();
  if (!key) throw new Error('the canary key secret holds no key yet: put one with aws secretsmanager put-secret-value');
  return key;
}

export function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}
