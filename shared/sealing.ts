import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { config } from './config';

/**
 * Secrets kept at rest (webhook signing secrets) are sealed with AES-256-GCM under one service key: given directly
 * to the local runtime, read once from Secrets Manager on AWS. These two functions are the only way in or out, so
 * the scheme can be swapped (for KMS envelope encryption) without touching their callers.
 */
const VERSION = 'v1';

let key: Promise<Buffer> | undefined;

async function readKey(): Promise<Buffer> {
  const { literal, secretArn } = config().sealingKey;
  let material = literal;
  if (!material) {
    if (!secretArn) throw new Error('neither SEALING_KEY nor SEALING_KEY_SECRET_ARN is set');
    const secrets = new SecretsManagerClient({ region: config().region });
    material = (await secrets.send(new GetSecretValueCommand({ SecretId: secretArn }))).SecretString;
    if (!material) throw new Error('the sealing key secret is empty');
  }
  // Any string of enough entropy becomes a 256-bit key.
  return createHash('sha256').update(material).digest();
}

function sealingKey(): Promise<Buffer> {
  key ??= readKey();
  key.catch(() => (key = undefined));
  return key;
}

export async function sealSecret(plaintext: string): Promise<string> {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', await sealingKey(), iv);
  const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv.toString('base64'), cipher.getAuthTag().toString('base64'), sealed.toString('base64')].join(':');
}

export async function openSealedSecret(sealed: string): Promise<string> {
  const [version, iv, tag, data] = sealed.split(':');
  if (version !== VERSION || !iv || !tag || !data) throw new Error('not a sealed secret');
  const decipher = createDecipheriv('aes-256-gcm', await sealingKey(), Buffer.from(iv, 'base64'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
}
