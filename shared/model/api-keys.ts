import { createHash } from 'node:crypto';
import { base62Of, randomBase62, sha256Hex } from './crypto';

export const API_KEY_PREFIX = 'svcmcp_';
const BODY_LENGTH = 32; // 32 base62 characters carry 190 bits of entropy
const CHECKSUM_LENGTH = 6;
const KEY_LENGTH = API_KEY_PREFIX.length + BODY_LENGTH + CHECKSUM_LENGTH;
export const FULL_KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);
const KEY_PREFIX_LENGTH = 12;
/** Active keys an account may hold at once; revoking one gives its place back. */
export const ACTIVE_KEYS_PER_ACCOUNT = 50;
export const KEY_PREFIX_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${KEY_PREFIX_LENGTH - API_KEY_PREFIX.length}}$`);

function checksum(body: string): string {
  return base62Of(
    createHash('sha256')
      .update(API_KEY_PREFIX + body)
      .digest()
      .subarray(0, 5),
    CHECKSUM_LENGTH,
  );
}

export interface GeneratedApiKey {
  readonly fullKey: string;
  readonly keyHash: string;
  readonly keyPrefix: string;
}

export function generateApiKey(): GeneratedApiKey {
  const body = randomBase62(BODY_LENGTH);
  const fullKey = API_KEY_PREFIX + body + checksum(body);
  return { fullKey, keyHash: sha256Hex(fullKey), keyPrefix: fullKey.slice(0, KEY_PREFIX_LENGTH) };
}

/** True when the key has our shape and its checksum matches: typos and forgeries are refused without a lookup. */
export function isWellFormedApiKey(key: string): boolean {
  if (key.length !== KEY_LENGTH || !FULL_KEY_PATTERN.test(key)) return false;
  const body = key.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + BODY_LENGTH);
  return key.slice(-CHECKSUM_LENGTH) === checksum(body);
}

export const hashApiKey = sha256Hex;
