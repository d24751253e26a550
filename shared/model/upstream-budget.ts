/**
 * The upstream request budget as pure arithmetic: a token bucket shared by every function, kept in one item, set
 * below the provider's per-token limits. Each call takes a token; who may take the last ones depends on priority.
 *
 * The bucket is kept as a theoretical arrival time (GCRA): `tat`, the moment the bucket would be full again. Each
 * call moves it one emission interval (the time the bucket takes to earn a token back) into the future, and the
 * tokens left at `now` are what the distance from `now` to `tat` has not spent. A take from a bucket that is not full
 * is then one addition, which commutes: concurrent takes never collide, and the condition that bounds `tat` refuses
 * exactly the takes the budget does not have.
 */
export type UpstreamPriority = 'workflow' | 'sweep' | 'live';

export interface BudgetSettings {
  /** Tokens the bucket holds when full: the most calls in a burst. */
  readonly capacity: number;
  /** Tokens added a second: the sustained rate. */
  readonly refillPerSecond: number;
}

export interface BucketState {
  /** When the bucket is full again (ms); at or before now, it is full. */
  readonly tat: number;
  /** Until when the upstream asked us to wait after a 429 (ms); only workflow steps send before then. */
  readonly holdUntil: number;
}

/**
 * The share of the bucket each priority must leave for those above it: workflow steps (lifecycles under way) may
 * empty it, the fleet sweep stops at a fifth, live status reads at half (they have the stored state to fall back on).
 */
const RESERVED_SHARE: Readonly<Record<UpstreamPriority, number>> = { workflow: 0, sweep: 0.2, live: 0.5 };

/** The time the bucket takes to earn one token back (ms). */
const emissionMs = (settings: BudgetSettings): number => 1000 / settings.refillPerSecond;

export function tokensAt(state: BucketState | undefined, nowMs: number, settings: BudgetSettings): number {
  if (!state) return settings.capacity;
  return Math.min(settings.capacity, settings.capacity - (state.tat - nowMs) / emissionMs(settings));
}

/** The bucket holding `tokens` at `nowMs` (an operator's or a test's setting). */
const bucketWith = (tokens: number, nowMs: number, settings: BudgetSettings, holdUntil = 0): BucketState => ({
  tat: nowMs + (settings.capacity - tokens) * emissionMs(settings),
  holdUntil,
});

/** An empty bucket: what a 429 says of a bucket this service had not counted yet. */
export const emptyBucketTat = (nowMs: number, settings: BudgetSettings): number => bucketWith(0, nowMs, settings).tat;

/** The two forms of a take's write: add to a bucket not full, or set a full one from now (see TakePlan). */
export type TakeMode = 'queue' | 'start';

/**
 * One round of a take of `count` tokens, its conditional writes sent at once. On a bucket not full (`tat` at or after
 * now), `queue` adds `count` intervals to `tat` on condition that it is at most `latestTat`; on a full one (`tat`
 * before now, or never written), `start` sets it to `startTat` on condition that it is still before now. A bucket last
 * seen not full still is (`tat` only ever moves later): `queue`. One last seen full most likely still is: `start`,
 * and a second round when another function took from it since. A take that must not cost a round of its own (one
 * sent beside a request's write, `inOneRound`) sends both writes at once instead, paying a refused write on a full
 * bucket (the store lets at most one of them hold). `held` says whether a 429's hold refuses this priority: the writes
 * are then conditioned on the hold having passed.
 */
export interface TakePlan {
  readonly modes: readonly TakeMode[];
  readonly addMs: number;
  readonly startTat: number;
  readonly latestTat: number;
  readonly nowMs: number;
  readonly held: boolean;
}

export function takePlan(
  known: BucketState | undefined,
  nowMs: number,
  priority: UpstreamPriority,
  settings: BudgetSettings,
  count = 1,
  inOneRound = false,
): TakePlan {
  const interval = emissionMs(settings);
  const full = known === undefined || known.tat < nowMs;
  return {
    modes: !full ? ['queue'] : inOneRound ? ['start', 'queue'] : ['start'],
    addMs: count * interval,
    startTat: nowMs + count * interval,
    latestTat: nowMs + (settings.capacity * (1 - RESERVED_SHARE[priority]) - count) * interval,
    nowMs,
    held: priority !== 'workflow',
  };
}

/** What several answers tell of a bucket that only ever moves later: the latest `tat` and hold among them. */
export function latestBucket(seen: readonly (BucketState | undefined)[]): BucketState | undefined {
  const known = seen.filter((bucket) => bucket !== undefined);
  if (known.length === 0) return undefined;
  return { tat: Math.max(...known.map((b) => b.tat)), holdUntil: Math.max(...known.map((b) => b.holdUntil)) };
}

/** Whether a take of `count` tokens at this priority may be sent now, and the bucket after it. */
export function takeToken(
  state: BucketState | undefined,
  nowMs: number,
  priority: UpstreamPriority,
  settings: BudgetSettings,
  count = 1,
): { readonly granted: boolean; readonly next: BucketState } {
  const plan = takePlan(state, nowMs, priority, settings, count);
  const holdUntil = state?.holdUntil ?? 0;
  const held = plan.held && nowMs < holdUntil;
  // A full bucket counts from now: the time it sat full earned nothing beyond its capacity.
  const from = state === undefined || state.tat < nowMs ? nowMs : state.tat;
  const granted = !held && from <= plan.latestTat;
  return { granted, next: { tat: granted ? from + plan.addMs : (state?.tat ?? nowMs), holdUntil } };
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
