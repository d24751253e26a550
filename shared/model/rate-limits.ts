/**
 * The spec's limits, counted per account so that extra keys never raise them; and the console's, counted per
 * session on the cookie routes.
 */
export const rateLimits = {
  general: { limit: 60, windowSeconds: 60 },
  deploy: { limit: 5, windowSeconds: 3600 },
  session: { limit: 60, windowSeconds: 60 },
} as const;
export type RateLimitName = keyof typeof rateLimits;

/** Failed authentications per source address: past the limit (configurable) the answer is 429 instead of 401. */
export const FAILED_AUTH_POLICY = 'failed-auth';
export const FAILED_AUTH_WINDOW_SECONDS = 60;
export const DEFAULT_FAILED_AUTH_LIMIT = 20;

/** The RateLimit-Policy entry of a limit window. */
export const policyOf = (name: string, limit: number, windowSeconds: number) => `"${name}";q=${limit};w=${windowSeconds}`;

export interface WindowState {
  readonly name: RateLimitName;
  readonly remaining: number;
  /** Seconds until the oldest counted request leaves the window and a unit comes back (at least 1). */
  readonly resetSeconds: number;
  readonly exceeded: boolean;
  /** This request's own entry in the window, when it was counted, so that it can be given back. */
  readonly taken?: number;
}

/**
 * Entries of a sliding window are the accepted requests' times in microseconds (milliseconds × 1000 plus a random
 * tie-breaker, so that each is unique and can be given back), newest first.
 */
export const entryTimeMs = (entry: number) => Math.floor(entry / 1000);

/**
 * The window as of `nowMs`, from its newest entries: the requests counted are those of the last `limit` accepted
 * that are less than the window's length old, so the limit holds over every interval of that length. A unit comes
 * back when the oldest counted request leaves the window: that is `resetSeconds`, rounded up to whole seconds.
 */
export function slidingWindowState(
  name: RateLimitName,
  newestFirst: readonly number[],
  nowMs: number,
  exceeded: boolean,
  taken?: number,
): WindowState {
  const { limit, windowSeconds } = rateLimits[name];
  const { remaining, resetSeconds } = readSlidingWindow(newestFirst, nowMs, limit, windowSeconds);
  return { name, remaining, resetSeconds, exceeded, ...(taken === undefined ? {} : { taken }) };
}

/** What remains of a sliding window of `limit` in `windowSeconds`, and the seconds until a unit comes back. */
export function readSlidingWindow(
  newestFirst: readonly number[],
  nowMs: number,
  limit: number,
  windowSeconds: number,
): { remaining: number; resetSeconds: number } {
  const counted = newestFirst.slice(0, limit).filter((entry) => entryTimeMs(entry) > nowMs - windowSeconds * 1000);
  const oldest = counted.at(-1);
  const resetSeconds = oldest === undefined ? windowSeconds : Math.ceil((entryTimeMs(oldest) + windowSeconds * 1000 - nowMs) / 1000);
  return { remaining: Math.max(0, limit - counted.length), resetSeconds: Math.max(1, resetSeconds) };
}

/** The IETF RateLimit / RateLimit-Policy header pair for the windows a route counts. */
export function rateLimitHeaders(states: readonly WindowState[]): Record<string, string> {
  if (states.length === 0) return {};
  return {
    'RateLimit-Policy': states.map(({ name }) => policyOf(name, rateLimits[name].limit, rateLimits[name].windowSeconds)).join(', '),
    RateLimit: states.map((s) => `"${s.name}";r=${s.remaining};t=${s.resetSeconds}`).join(', '),
  };
}
