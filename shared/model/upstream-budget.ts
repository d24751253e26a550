/**
 * The upstream request budget as pure arithmetic: a token bucket shared by every function, kept in one item, set
 * below the provider's per-token limits. Each call takes a token; who may take the last ones depends on priority.
 */
export type UpstreamPriority = 'workflow' | 'sweep' | 'live';

export interface BudgetSettings {
  /** Tokens the bucket holds when full: the most calls in a burst. */
  readonly capacity: number;
  /** Tokens added a second: the sustained rate. */
  readonly refillPerSecond: number;
}

export interface BucketState {
  readonly tokens: number;
  /** When `tokens` was counted (ms). */
  readonly at: number;
  /** Until when the upstream asked us to wait after a 429 (ms); only workflow steps send before then. */
  readonly holdUntil: number;
}

/**
 * The share of the bucket each priority must leave for those above it: workflow steps (lifecycles under way) may
 * empty it, the fleet sweep stops at a fifth, live status reads at half (they have the stored state to fall back on).
 */
const RESERVED_SHARE: Readonly<Record<UpstreamPriority, number>> = { workflow: 0, sweep: 0.2, live: 0.5 };

export function tokensAt(state: BucketState | undefined, nowMs: number, settings: BudgetSettings): number {
  if (!state) return settings.capacity;
  const elapsed = Math.max(0, nowMs - state.at) / 1000;
  return Math.min(settings.capacity, state.tokens + elapsed * settings.refillPerSecond);
}

/** Whether a call of this priority may be sent now, and the bucket after it takes its token. */
export function takeToken(
  state: BucketState | undefined,
  nowMs: number,
  priority: UpstreamPriority,
  settings: BudgetSettings,
): { readonly granted: boolean; readonly next: BucketState } {
  const available = tokensAt(state, nowMs, settings);
  const holdUntil = state?.holdUntil ?? 0;
  const held = priority !== 'workflow' && nowMs < holdUntil;
  const granted = !held && available - 1 >= RESERVED_SHARE[priority] * settings.capacity;
  return { granted, next: { tokens: granted ? available - 1 : available, at: nowMs, holdUntil } };
}

/**
 * When a 429 says to try again: `Retry-After` (seconds, or an HTTP date), else DigitalOcean's `ratelimit-reset`
 * (epoch seconds); capped, so that a wrong header never stops the sweep and the live reads for long.
 */
export function holdAfterThrottle(headers: { get(name: string): string | null }, nowMs: number, maxMs = 60_000): number {
  const retryAfter = headers.get('retry-after');
  const reset = headers.get('ratelimit-reset');
  let until = nowMs + 1_000;
  if (retryAfter !== null && /^\d+$/.test(retryAfter.trim())) until = nowMs + Number(retryAfter) * 1000;
  else if (retryAfter !== null && !Number.isNaN(Date.parse(retryAfter))) until = Date.parse(retryAfter);
  else if (reset !== null && /^\d+$/.test(reset.trim())) until = Number(reset) * 1000;
  return Math.min(Math.max(until, nowMs), nowMs + maxMs);
}
