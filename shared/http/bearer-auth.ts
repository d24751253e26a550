import { API_KEY_PREFIX, hashApiKey, isWellFormedApiKey } from '../domain/api-keys';
import { forbidden, rateLimitExceeded, unauthorized } from '../domain/errors';
import { fixedWindow, rateLimits, type RateLimitName, type WindowState } from '../domain/rate-limits';
import { getAccount, type Account } from '../store/accounts';
import { getApiKeyByHash, touchApiKey, type ApiKey } from '../store/api-keys';
import { giveBackWindow, hitWindow } from '../store/counters';
import { logger } from '../observability';

export interface BearerPrincipal {
  readonly account: Account;
  readonly apiKey: ApiKey;
}

const BEARER = /^Bearer +(\S+)$/i;

/**
 * Counts the request in each window the route is subject to, all at once. A request refused by one window gives
 * back what it took from the narrower ones (the deploy quota), so that a refused create never uses up deploys;
 * the general window keeps it, since every authenticated request counts there.
 */
export async function countRequest(accountId: string, limits: readonly RateLimitName[], nowMs: number): Promise<WindowState[]> {
  const counted = await Promise.all(
    limits.map(async (name) => {
      const window = fixedWindow(name, nowMs);
      const counter = `rate#${name}#${accountId}#${window.startsAt}`;
      const hit = await hitWindow(counter, rateLimits[name].limit, window.endsAt);
      return {
        counter,
        state: {
          name,
          remaining: Math.max(0, rateLimits[name].limit - hit.count),
          resetSeconds: window.resetSeconds,
          exceeded: !hit.allowed,
        },
      };
    }),
  );
  if (!counted.some(({ state }) => state.exceeded)) return counted.map(({ state }) => state);
  return Promise.all(
    counted.map(async ({ counter, state }): Promise<WindowState> => {
      if (state.exceeded || state.name === 'general') return state;
      await giveBackWindow(counter);
      return { ...state, remaining: state.remaining + 1 };
    }),
  );
}

/**
 * The spec's Bearer checks in the spec's order, plus the rate limits, in two sequential DynamoDB round trips:
 * the key lookup, then the account read, the window counters and the last-used stamp together.
 * `onWindows` receives the window states as soon as they are known, so that even an error carries the headers.
 */
export async function authenticateBearer(
  authorization: string | undefined,
  limits: readonly RateLimitName[],
  onWindows: (states: WindowState[]) => void,
  now = new Date(),
): Promise<BearerPrincipal> {
  const token = BEARER.exec(authorization ?? '')?.[1];
  if (!token) throw unauthorized('Missing or malformed Authorization header');
  if (!token.startsWith(API_KEY_PREFIX)) throw unauthorized('Invalid API key prefix');
  if (!isWellFormedApiKey(token)) throw unauthorized('Invalid or revoked API key');

  const apiKey = await getApiKeyByHash(hashApiKey(token));
  if (!apiKey || !apiKey.is_active) throw unauthorized('Invalid or revoked API key');

  const [account, windows] = await Promise.all([
    getAccount(apiKey.account_id),
    countRequest(apiKey.account_id, limits, now.getTime()),
    touchApiKey(apiKey, now).catch((error: unknown) => logger.warn('could not record key use', { error })),
  ]);
  if (!account || account.deleted_at !== null) throw unauthorized('API key owner not found');
  if (account.suspended) throw forbidden('Account suspended');
  if (!account.confirmed) throw forbidden('Account not confirmed');

  onWindows(windows);
  const exceeded = windows.filter((w) => w.exceeded);
  if (exceeded.length > 0) throw rateLimitExceeded(Math.max(...exceeded.map((w) => w.resetSeconds)));
  return { account, apiKey };
}
