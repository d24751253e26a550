import { insertAccount, type Account } from '../store/accounts';
import { insertApiKey, type ApiKey } from '../store/api-keys';
import { nextSequenceValue } from '../store/counters';
import { insertSession } from '../store/sessions';
import { generateApiKey } from './api-keys';
import { randomBase62, sha256Hex } from './crypto';

export const SESSION_TTL_SECONDS = 24 * 3600;

export interface NewAccount {
  readonly accountId?: string;
  readonly email: string;
  readonly confirmed: boolean;
  readonly suspended: boolean;
}

export async function openAccount({ accountId, email, confirmed, suspended }: NewAccount): Promise<Account> {
  const account: Account = {
    account_id: accountId ?? `acct_${randomBase62(20)}`,
    email,
    confirmed,
    suspended,
    deleted_at: null,
    balance: 0,
    total_deposited: 0,
    billing_paused: false,
    created_at: new Date().toISOString(),
  };
  await insertAccount(account);
  return account;
}

/** Whole cents only, converted without floating-point drift. */
export function usdToMicros(usd: string): number {
  const match = /^(\d{1,9})(?:\.(\d{1,2}))?$/.exec(usd.trim());
  if (!match) throw new Error(`not an amount in dollars and cents: ${usd}`);
  return Number(match[1]) * 1_000_000 + Number((match[2] ?? '').padEnd(2, '0')) * 10_000;
}

export interface IssuedApiKey {
  readonly record: ApiKey;
  readonly fullKey: string;
}

export async function issueApiKey(accountId: string, name: string): Promise<IssuedApiKey> {
  const { fullKey, keyHash, keyPrefix } = generateApiKey();
  const record: ApiKey = {
    key_hash: keyHash,
    id: await nextSequenceValue('api_key_id'),
    account_id: accountId,
    name,
    key_prefix: keyPrefix,
    is_active: true,
    created_at: new Date().toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  await insertApiKey(record);
  return { record, fullKey };
}

export interface IssuedSession {
  readonly session: string;
  readonly csrfToken: string;
  readonly expiresAt: Date;
}

/** A browser session and its synchronizer CSRF token; only their hashes are stored. */
export async function openSession(accountId: string, ttlSeconds = SESSION_TTL_SECONDS): Promise<IssuedSession> {
  const session = randomBase62(43);
  const csrfToken = randomBase62(43);
  const now = Date.now();
  const expiresAt = new Date(now + ttlSeconds * 1000);
  await insertSession({
    session_hash: sha256Hex(session),
    account_id: accountId,
    csrf_hash: sha256Hex(csrfToken),
    created_at: new Date(now).toISOString(),
    expires_at: Math.floor(expiresAt.getTime() / 1000),
  });
  return { session, csrfToken, expiresAt };
}
