import type { Deps } from './deps';
import type { Account } from '../store/accounts';
import { getAccountApiKey, KeyLimitError, listAccountApiKeys, revokeApiKey } from '../store/api-keys';
import { DEFAULT_KEY_NAME, type ApiKeyInfo, type CreateKeyBody, type CreatedApiKey } from '../schemas/keys';
import { issueApiKey } from './accounts';
import { ACTIVE_KEYS_PER_ACCOUNT } from '../model/api-keys';
import { Failure, notFound, paymentRequired } from '../model/errors';
import { toApiKeyInfo } from './views';

/** Creating keys needs deposits of $1 or more in total, ever: sticky, whatever the balance is now. */
export const KEY_DEPOSIT_MIN_MICROS = 1_000_000;

export async function listKeys(deps: Deps, accountId: string): Promise<ApiKeyInfo[]> {
  return (await listAccountApiKeys(deps, accountId)).map(toApiKeyInfo);
}

export async function createKey(deps: Deps, account: Account, body: CreateKeyBody): Promise<CreatedApiKey> {
  if (account.total_deposited < KEY_DEPOSIT_MIN_MICROS) throw paymentRequired('Deposit required');
  try {
    const { record, fullKey } = await issueApiKey(deps, account.account_id, body?.name ?? DEFAULT_KEY_NAME);
    return { ...toApiKeyInfo(record), full_key: fullKey };
  } catch (error) {
    if (error instanceof KeyLimitError) {
      throw new Failure('conflict', `Key limit reached (at most ${ACTIVE_KEYS_PER_ACCOUNT} active keys per account)`);
    }
    throw error;
  }
}

/** Revokes for good; the very next request with the key is refused. Revoking a revoked key is still ok. */
export async function revokeKey(deps: Deps, accountId: string, keyId: number | undefined): Promise<{ ok: true; id: number }> {
  const key = keyId === undefined ? undefined : await getAccountApiKey(deps, accountId, keyId);
  if (!key) throw notFound('Key not found');
  await revokeApiKey(deps, key, deps.clock.now().toISOString());
  return { ok: true, id: key.id };
}
