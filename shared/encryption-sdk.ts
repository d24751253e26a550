import { buildDecrypt } from '@aws-crypto/decrypt-node';
import { buildEncrypt } from '@aws-crypto/encrypt-node';

/**
 * The parts of the AWS Encryption SDK the service uses, from the SDK's ES module packages. Its umbrella package,
 * `@aws-crypto/client-node`, is CommonJS only: loaded as a chunk of a split bundle, it came without the names it
 * re-exports (CommitmentPolicy was undefined), and it brings the hierarchical keyring's DynamoDB client along.
 */
export { AlgorithmSuiteIdentifier, CommitmentPolicy, type KeyringNode } from '@aws-crypto/material-management-node';
export { KmsKeyringNode } from '@aws-crypto/kms-keyring-node';
export { RawAesKeyringNode, RawAesWrappingSuiteIdentifier } from '@aws-crypto/raw-aes-keyring-node';

/** The SDK's client: encrypt and decrypt under one commitment policy (as `buildClient` of the umbrella package). */
export function buildClient(options: Parameters<typeof buildEncrypt>[0] & Parameters<typeof buildDecrypt>[0]) {
  return { ...buildEncrypt(options), ...buildDecrypt(options) };
}
