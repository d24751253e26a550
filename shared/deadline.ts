import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The invocation's deadline, set once by the handler wrappers from the Lambda context and read by whatever is
 * about to start slow work (the upstream driver), so no handler passes it around; on a route, also the signal that
 * its budget ran out and it answered without waiting for its work.
 */
interface Budget {
  readonly deadline: number;
  readonly signal?: AbortSignal;
}
const budgets = new AsyncLocalStorage<Budget>();

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

/** Runs `work` with the deadline `clock` reports, less the reserve; without a clock there is no deadline. */
export function runWithDeadline<T>(clock: InvocationClock | undefined, work: () => T, { reserveMs = 0, signal }: BudgetOptions = {}): T {
  const remaining = clock?.getRemainingTimeInMillis?.();
  if (remaining === undefined) return work();
  return budgets.run({ deadline: Date.now() + remaining - reserveMs, signal }, work);
}

/** Milliseconds until the work's deadline; Infinity outside an invocation with a deadline. */
export function remainingMs(): number {
  const budget = budgets.getStore();
  return budget === undefined ? Number.POSITIVE_INFINITY : budget.deadline - Date.now();
}

/**
 * Aborted once the route answered without waiting for its work. Given to the calls before a commit, so that work
 * whose answer was already sent stops before it changes anything; never to a commit itself, whose outcome must still
 * be recorded.
 */
export function budgetSignal(): AbortSignal | undefined {
  return budgets.getStore()?.signal;
}

/** Whether work that may take up to `durationMs` would still end, with the reserve, before the cut-off. */
export function hasTimeFor(durationMs: number): boolean {
  return remainingMs() - FINISH_RESERVE_MS >= durationMs;
}
