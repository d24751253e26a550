/** The spec's limits, counted per account so that extra keys never raise them. */
export const rateLimits = {
  general: { limit: 60, windowSeconds: 60 },
  deploy: { limit: 5, windowSeconds: 3600 },
} as const;
export type RateLimitName = keyof typeof rateLimits;

export interface WindowState {
  readonly name: RateLimitName;
  readonly remaining: number;
  /** Seconds until the window resets (at least 1). */
  readonly resetSeconds: number;
  readonly exceeded: boolean;
}

export function fixedWindow(name: RateLimitName, nowMs: number) {
  const { windowSeconds } = rateLimits[name];
  const nowSeconds = Math.floor(nowMs / 1000);
  const startsAt = nowSeconds - (nowSeconds % windowSeconds);
  const endsAt = startsAt + windowSeconds;
  return { startsAt, endsAt, resetSeconds: Math.max(1, endsAt - nowSeconds) };
}

/** The IETF RateLimit / RateLimit-Policy header pair for the windows a route counts. */
export function rateLimitHeaders(states: readonly WindowState[]): Record<string, string> {
  if (states.length === 0) return {};
  return {
    'RateLimit-Policy': states
      .map(({ name }) => `"${name}";q=${rateLimits[name].limit};w=${rateLimits[name].windowSeconds}`)
      .join(', '),
    RateLimit: states.map((s) => `"${s.name}";r=${s.remaining};t=${s.resetSeconds}`).join(', '),
  };
}
