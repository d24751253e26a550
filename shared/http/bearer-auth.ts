import { standingOf } from '../domain/accounts';
import { API_KEY_PREFIX, hashApiKey, isWellFormedApiKey } from '../domain/api-keys';
import { forbidden, rateLimitExceeded, unauthorized } from '../domain/errors';
import { rateLimits, slidingWindowState, type RateLimitName, type WindowState } from '../domain/rate-limits';
import { getAccount, type Account } from '../store/accounts';
import { getApiKeyByHash, touchApiKey, type ApiKey } from '../store/api-keys';
import { giveBackSlidingWindow, hitSlidingWindow } from '../store/counters';
import { logger } from '../observability';
import { NEGATIVE_CACHE_TTL_MS, unknownCredentials } from './flood-guard';

export interface BearerPrincipal {
  readonly account: Account;
  readonly apiKey: ApiKey;
}

const BEARER = /^Bearer +(\S+)$/i;

const windowCounter = (name: RateLimitName, accountId: string) => `rate#${name}#${accountId}`;

/**
 * Counts the request in each sliding window the route is subject to, all at once. A request refused by one window
 * gives back what it took from the narrower ones (the deploy quota), so that a refused create never uses up
 * deploys; the general window keeps it, since every authenticated request counts there.
 */
export async function countRequest(accountId: string, limits: readonly RateLimitName[], nowMs: number): Promise<WindowState[]> {
  const windows = await Promise.all(
    limits.map(async (name) => {
      const { limit, windowSeconds } = rateLimits[name];
      const hit = await hitSlidingWindow(windowCounter(name, accountId), limit, windowSeconds * 1000, nowMs);
      return slidingWindowState(name, hit.newestFirst, nowMs, !hit.allowed, hit.allowed ? hit.entry : undefined);
    }),
  );
  if (!windows.some((window) => window.exceeded)) return windows;
  return Promise.all(windows.map((window) => (window.name === 'general' ? window : giveBack(accountId, window))));
}

/** Takes the request back out of a window it was counted in; the state then shows the unit back. */
export async function giveBack(accountId: string, window: WindowState): Promise<WindowState> {
  if (window.taken === undefined) return window;
  await giveBackSlidingWindow(windowCounter(window.name, accountId), window.taken);
  return { name: window.name, remaining: window.remaining + 1, resetSeconds: window.resetSeconds, exceeded: window.exceeded };
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

  // A key just found unknown or revoked is refused again without a read (never the other way round: a key found
  // active is looked up again on the next request, so a revocation applies at once).
  const keyHash = hashApiKey(token);
  if (unknownCredentials.has(`key#${keyHash}`, now.getTime())) throw unauthorized('Invalid or revoked API key');
  const apiKey = await getApiKeyByHash(keyHash);
  if (!apiKey || !apiKey.is_active) {
    unknownCredentials.set(`key#${keyHash}`, now.getTime() + NEGATIVE_CACHE_TTL_MS);
    throw unauthorized('Invalid or revoked API key');
  }

  const [account, windows] = await Promise.all([
    getAccount(apiKey.account_id),
    countRequest(apiKey.account_id, limits, now.getTime()),
    touchApiKey(apiKey, now).catch((error: unknown) => logger.warn('could not record key use', { error })),
  ]);
  onWindows(windows);
  const standing = standingOf(account);
  if (!account || standing === 'gone') throw unauthorized('API key owner not found');
  if (standing === 'suspended') throw forbidden('Account suspended');
  if (standing === 'unconfirmed') throw forbidden('Account not confirmed');

  const exceeded = windows.filter((w) => w.exceeded);
  if (exceeded.length > 0) throw rateLimitExceeded(Math.max(...exceeded.map((w) => w.resetSeconds)));
  return { account, apiKey };
}
