import type { Deps } from '../domain/deps';
import { standingRefusal } from '../model/account';
import { API_KEY_PREFIX, hashApiKey, isWellFormedApiKey } from '../model/api-keys';
import { unauthorized } from '../model/errors';
import { getAccount, type Account } from '../store/accounts';
import { getApiKeyByHash, touchApiKey, type ApiKey } from '../store/api-keys';
import { logger } from '../observability';
import { NEGATIVE_CACHE_TTL_MS, unknownCredentials } from './flood-guard';

export interface BearerPrincipal {
  readonly account: Account;
  readonly apiKey: ApiKey;
}

const BEARER = /^Bearer +(\S+)$/i;

/**
 * The spec's Bearer checks on the key itself, in the spec's order: one read, the key by its hash.
 */
export async function findActiveKey(deps: Deps, authorization: string | undefined, now = deps.clock.now()): Promise<ApiKey> {
  const token = BEARER.exec(authorization ?? '')?.[1];
  if (!token) throw unauthorized('Missing or malformed Authorization header');
  if (!token.startsWith(API_KEY_PREFIX)) throw unauthorized('Invalid API key prefix');
  if (!isWellFormedApiKey(token)) throw unauthorized('Invalid or revoked API key');

  // A key just found unknown or revoked is refused again without a read (never the other way round: a key found
  // active is looked up again on the next request, so a revocation applies at once).
  const keyHash = hashApiKey(token);
  if (unknownCredentials.of(deps).has(`key#${keyHash}`, now.getTime())) throw unauthorized('Invalid or revoked API key');
  const apiKey = await getApiKeyByHash(deps, keyHash);
  if (!apiKey || !apiKey.is_active) {
    unknownCredentials.of(deps).set(`key#${keyHash}`, now.getTime() + NEGATIVE_CACHE_TTL_MS);
    throw unauthorized('Invalid or revoked API key');
  }
  return apiKey;
}

/** The rest of the spec's checks: the key's owner exists and is in standing. Records the key's use alongside. */
export async function authenticateOwner(deps: Deps, apiKey: ApiKey, now = deps.clock.now()): Promise<BearerPrincipal> {
  const [account] = await Promise.all([
    getAccount(deps, apiKey.account_id),
    touchApiKey(deps, apiKey, now).catch((error: unknown) => logger.warn('could not record key use', { error })),
  ]);
  const refusal = standingRefusal(account, 'API key owner not found');
  if (refusal || !account) throw refusal ?? unauthorized('API key owner not found');
  return { account, apiKey };
}
