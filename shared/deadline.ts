import type { Platform } from './platform';

/**
 * The invocation's deadline, set once by the entry points from the Lambda context on the dependencies they hand in,
 * and read by whatever is about to start slow work (the upstream driver, a retry's pause); on a route, also the
 * signal that its budget ran out and it answered without waiting for its work.
 */

/** Kept back after the last upstream call ends: to record its outcome in DynamoDB and return. */
const FINISH_RESERVE_MS = 1_500;

/** The part of the Lambda context that knows the time left; the local runtimes may not provide it. */
export interface InvocationClock {
  getRemainingTimeInMillis?: () => number;
}

export interface BudgetOptions {
  /** Kept back from the time `clock` reports: the work's deadline comes that much before the cut-off. */
  readonly reserveMs?: number;
  /** Aborted when the budget has run out (the request was answered without its work). */
  readonly signal?: AbortSignal;
}

/** The dependencies for work with the deadline `clock` reports, less the reserve; without a clock there is no deadline. */
export function withDeadline<D extends Platform>(
  deps: D,
  clock: InvocationClock | undefined,
  { reserveMs = 0, signal }: BudgetOptions = {},
): D {
  const remaining = clock?.getRemainingTimeInMillis?.();
  if (remaining === undefined) return deps;
  return { ...deps, invocation: { ...deps.invocation, deadline: Date.now() + remaining - reserveMs, signal } };
}

/** Milliseconds until the work's deadline; Infinity outside an invocation with a deadline. */
export function remainingMs(deps: Platform): number {
  const deadline = deps.invocation?.deadline;
  return deadline === undefined ? Number.POSITIVE_INFINITY : deadline - Date.now();
}

/**
 * Aborted once the route answered without waiting for its work. Given to the calls before a commit, so that work
 * whose answer was already sent stops before it changes anything; never to a commit itself, whose outcome must still
 * be recorded.
 */
export function budgetSignal(deps: Platform): AbortSignal | undefined {
  return deps.invocation?.signal;
}

/** Whether work that may take up to `durationMs` would still end, with the reserve, before the cut-off. */
export function hasTimeFor(deps: Platform, durationMs: number): boolean {
  return remainingMs(deps) - FINISH_RESERVE_MS >= durationMs;
}
