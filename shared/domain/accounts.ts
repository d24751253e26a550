import type { Deps } from './deps';
import { getAccount, insertAccount, type Account } from '../store/accounts';
import { insertApiKeyWithinLimit, type ApiKey } from '../store/api-keys';
import { nextSequenceValue } from '../store/counters';
import { insertSession } from '../store/sessions';
import { ACTIVE_KEYS_PER_ACCOUNT, generateApiKey } from '../model/api-keys';
import { createHash } from 'node:crypto';
import { base62Of, randomBase62, sha256Hex } from '../model/crypto';

const SESSION_TTL_SECONDS = 24 * 3600;

export interface NewAccount {
  readonly accountId?: string;
  readonly email: string;
  readonly confirmed: boolean;
  readonly suspended: boolean;
}

export async function openAccount(deps: Deps, details: NewAccount): Promise<Account> {
  const account = newAccountRecord(details);
  await insertAccount(deps, account);
  return account;
}

/** A fresh account with nothing deposited, not yet stored. */
export function newAccountRecord({ accountId, email, confirmed, suspended }: NewAccount): Account {
  return {
    account_id: accountId ?? `acct_${randomBase62(20)}`,
    email,
    confirmed,
    suspended,
    deleted_at: null,
    balance: 0,
    total_deposited: 0,
    billing_paused: false,
    created_at: new Date().toISOString(),
    password_version: 0,
    payment_customer_id: null,
    payment_method_id: null,
    auto_recharge: null,
    recharge_crossing: 0,
    balance_notice: 'none',
    burning: {},
    billing_version: 0,
  };
}

export { microsToUsd, usdToMicros } from '../model/money';

export interface IssuedApiKey {
  readonly record: ApiKey;
  readonly fullKey: string;
}

export async function issueApiKey(deps: Deps, accountId: string, name: string): Promise<IssuedApiKey> {
  const { fullKey, keyHash, keyPrefix } = generateApiKey();
  const record: ApiKey = {
    key_hash: keyHash,
    id: await nextSequenceValue(deps, 'api_key_id'),
    account_id: accountId,
    name,
    key_prefix: keyPrefix,
    is_active: true,
    created_at: deps.clock.now().toISOString(),
    last_used_at: null,
    revoked_at: null,
    counted: true,
  };
  await insertApiKeyWithinLimit(deps, record, ACTIVE_KEYS_PER_ACCOUNT);
  return { record, fullKey };
}

export interface IssuedSession {
  readonly session: string;
  readonly csrfToken: string;
  readonly expiresAt: Date;
}

/**
 * A session's CSRF token, derived from the session token: the signed-in page can fetch it again from the API with
 * its cookie (a cross-site page cannot read that answer), and nothing but hashes is stored.
 */
export function csrfTokenFor(session: string): string {
  return base62Of(createHash('sha256').update(`csrf:${session}`).digest(), 43);
}

/**
 * A browser session and its synchronizer CSRF token, opened under the credential generation a password was just
 * checked against; only their hashes are stored. Undefined when the password changed meanwhile.
 */
export async function openSessionUnder(
  deps: Deps,
  accountId: string,
  passwordVersion: number,
  ttlSeconds = SESSION_TTL_SECONDS,
): Promise<IssuedSession | undefined> {
  const session = randomBase62(43);
  const csrfToken = csrfTokenFor(session);
  const now = deps.clock.now().getTime();
  // Whole seconds, as stored, so the time told at sign-in is the one the session really ends.
  const expiresAt = new Date(Math.floor(now / 1000 + ttlSeconds) * 1000);
  const stored = await insertSession(deps, {
    session_hash: sha256Hex(session),
    account_id: accountId,
    csrf_hash: sha256Hex(csrfToken),
    created_at: new Date(now).toISOString(),
    expires_at: Math.floor(expiresAt.getTime() / 1000),
    password_version: passwordVersion,
  });
  return stored ? { session, csrfToken, expiresAt } : undefined;
}

/** A session for an account as it stands now (operator commands, the local demo account), without a password. */
export async function openSession(deps: Deps, accountId: string, ttlSeconds = SESSION_TTL_SECONDS): Promise<IssuedSession> {
  const account = await getAccount(deps, accountId);
  const issued = account && (await openSessionUnder(deps, accountId, account.password_version, ttlSeconds));
  if (!issued) throw new Error(`no session opened for ${accountId}: the account is missing or its password just changed`);
  return issued;
}
