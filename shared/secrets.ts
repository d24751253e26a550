import { readFileSync } from 'node:fs';
import {
  AlgorithmSuiteIdentifier,
  buildClient,
  CommitmentPolicy,
  KmsKeyringNode,
  RawAesKeyringNode,
  RawAesWrappingSuiteIdentifier,
  type KeyringNode,
} from '@aws-crypto/client-node';
import { config } from './config';

/**
 * Envelope encryption of customers' secrets (root passwords, generated private keys, stored responses that carry
 * them) with the AWS Encryption SDK. On AWS the data keys are wrapped by the stack's customer-managed KMS key;
 * locally by a raw AES-256 key read from a file. Every message is bound to an encryption context, and opening
 * one checks that the context it carries is exactly the expected one, so a ciphertext moved to another record
 * (another account or instance) does not open.
 */
export type SecretContext = Readonly<Record<string, string>>;

const { encrypt, decrypt } = buildClient({
  commitmentPolicy: CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT,
  // One keyring wraps each message's data key once; refusing more bounds the work a forged message can cause.
  maxEncryptedDataKeys: 1,
});

let keyring: KeyringNode | undefined;

function secretsKeyring(): KeyringNode {
  if (keyring) return keyring;
  const { kmsKeyArn, localKeyFile } = config().secrets;
  if (kmsKeyArn) {
    keyring = new KmsKeyringNode({ generatorKeyId: kmsKeyArn });
  } else if (localKeyFile) {
    const key = readFileSync(localKeyFile);
    if (key.length !== 32) throw new Error('the local secrets key file must hold exactly 32 bytes');
    keyring = new RawAesKeyringNode({
      keyNamespace: 'vps-provisioning-local',
      keyName: 'secrets',
      unencryptedMasterKey: new Uint8Array(key),
      wrappingSuite: RawAesWrappingSuiteIdentifier.AES256_GCM_IV12_TAG16_NO_PADDING,
    });
  } else {
    throw new Error('SECRETS_KMS_KEY_ARN or SECRETS_KEY_FILE must be set');
  }
  return keyring;
}

/** Encrypts `plaintext` under the context; the result is a base64 Encryption SDK message. */
export async function seal(plaintext: string, context: SecretContext): Promise<string> {
  // Committing and unsigned: only this service encrypts and decrypts, so a signature would add cost, not trust.
  const { result } = await encrypt(secretsKeyring(), plaintext, {
    encryptionContext: { ...context },
    suiteId: AlgorithmSuiteIdentifier.ALG_AES256_GCM_IV12_TAG16_HKDF_SHA512_COMMIT_KEY,
  });
  return result.toString('base64');
}

/** Decrypts a sealed message, refusing it unless it was sealed under exactly this context. */
export async function open(sealed: string, context: SecretContext): Promise<string> {
  const { plaintext, messageHeader } = await decrypt(secretsKeyring(), Buffer.from(sealed, 'base64'));
  const stored = messageHeader.encryptionContext;
  const expected = Object.entries(context);
  if (Object.keys(stored).length !== expected.length || expected.some(([name, value]) => stored[name] !== value)) {
    throw new Error('sealed secret does not belong to this record');
  }
  return plaintext.toString('utf8');
}
