import { runtimeSlot, type Platform } from './platform';
import { readFileSync } from 'node:fs';
import type { KeyringNode } from './encryption-sdk';
import { notBundled } from './aws';

/**
 * Envelope encryption of customers' secrets (root passwords, generated private keys, stored responses that carry
 * them) with the AWS Encryption SDK. On AWS the data keys are wrapped by the stack's customer-managed KMS key;
 * locally by a raw AES-256 key read from a file. Every message is bound to an encryption context, and opening
 * one checks that the context it carries is exactly the expected one, so a ciphertext moved to another record
 * (another account or instance) does not open.
 */
export type SecretContext = Readonly<Record<string, string>>;

type EncryptionSdk = typeof import('./encryption-sdk');

interface Crypto {
  readonly sdk: EncryptionSdk;
  readonly client: ReturnType<EncryptionSdk['buildClient']>;
  readonly keyring: KeyringNode;
}

/** The runtime's Encryption SDK client and keyring, once loaded (a failed load is tried again). */
const loading = runtimeSlot((): { crypto?: Promise<Crypto> } => ({}));

/**
 * The Encryption SDK is loaded on the first seal or open, not with the function: most requests of most functions
 * never touch a sealed secret, and it is the heaviest module a function bundles (only those that seal or open do).
 */
function crypto(deps: Platform): Promise<Crypto> {
  const state = loading.of(deps);
  if (state.crypto) return state.crypto;
  const loaded = loadEncryptionSdk().then((sdk) => ({
    sdk,
    client: sdk.buildClient({
      commitmentPolicy: sdk.CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT,
      // One keyring wraps each message's data key once; refusing more bounds the work a forged message can cause.
      maxEncryptedDataKeys: 1,
    }),
    keyring: secretsKeyring(deps, sdk),
  }));
  state.crypto = loaded;
  loaded.catch(() => {
    state.crypto = undefined;
  });
  return loaded;
}

/** Only functions that seal or open secrets bundle the Encryption SDK (and KMS with it). */
async function loadEncryptionSdk(): Promise<EncryptionSdk> {
  if (typeof __BUNDLES_SEALING__ === 'undefined' || __BUNDLES_SEALING__) return import('./encryption-sdk');
  throw notBundled('The AWS Encryption SDK');
}

/**
 * Starts loading the Encryption SDK without waiting for it, for a caller that will seal or open soon: its loading
 * then overlaps the caller's I/O instead of following it. Does nothing once it is loaded.
 */
export function prepareSecrets(deps: Platform): void {
  crypto(deps).catch(() => undefined);
}

function secretsKeyring(deps: Platform, { KmsKeyringNode, RawAesKeyringNode, RawAesWrappingSuiteIdentifier }: EncryptionSdk): KeyringNode {
  const { kmsKeyArn, localKeyFile } = deps.config.secrets;
  if (kmsKeyArn) return new KmsKeyringNode({ generatorKeyId: kmsKeyArn });
  if (localKeyFile) {
    const key = readFileSync(localKeyFile);
    if (key.length !== 32) throw new Error('the local secrets key file must hold exactly 32 bytes');
    return new RawAesKeyringNode({
      keyNamespace: 'vps-provisioning-local',
      keyName: 'secrets',
      unencryptedMasterKey: new Uint8Array(key),
      wrappingSuite: RawAesWrappingSuiteIdentifier.AES256_GCM_IV12_TAG16_NO_PADDING,
    });
  }
  throw new Error('SECRETS_KMS_KEY_ARN or SECRETS_KEY_FILE must be set');
}

/** Encrypts `plaintext` under the context; the result is a base64 Encryption SDK message. */
export async function seal(deps: Platform, plaintext: string, context: SecretContext): Promise<string> {
  // Committing and unsigned: only this service encrypts and decrypts, so a signature would add cost, not trust.
  const { sdk, client, keyring } = await crypto(deps);
  const { result } = await client.encrypt(keyring, plaintext, {
    encryptionContext: { ...context },
    suiteId: sdk.AlgorithmSuiteIdentifier.ALG_AES256_GCM_IV12_TAG16_HKDF_SHA512_COMMIT_KEY,
  });
  return result.toString('base64');
}

/** Decrypts a sealed message, refusing it unless it was sealed under exactly this context. */
export async function open(deps: Platform, sealed: string, context: SecretContext): Promise<string> {
  const { client, keyring } = await crypto(deps);
  const { plaintext, messageHeader } = await client.decrypt(keyring, Buffer.from(sealed, 'base64'));
  const stored = messageHeader.encryptionContext;
  const expected = Object.entries(context);
  if (Object.keys(stored).length !== expected.length || expected.some(([name, value]) => stored[name] !== value)) {
    throw new Error('sealed secret does not belong to this record');
  }
  return plaintext.toString('utf8');
}
