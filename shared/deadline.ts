import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The invocation's deadline, set once by the handler wrappers from the Lambda context and read by whatever is
 * about to start slow work (the upstream driver), so no handler passes it around.
 */
const deadlines = new AsyncLocalStorage<number>();

/** Kept back after the last upstream call ends: to record its outcome in DynamoDB and return. */
export const FINISH_RESERVE_MS = 1_500;

/** The part of the Lambda context that knows the time left; the local runtimes may not provide it. */
export interface InvocationClock {
  getRemainingTimeInMillis?: () => number;
}

/** Runs `work` with the deadline `clock` reports; without a clock there is no deadline. */
export function runWithDeadline<T>(clock: InvocationClock | undefined, work: () => T): T {
  const remaining = clock?.getRemainingTimeInMillis?.();
  if (remaining === undefined) return work();
  return deadlines.run(Date.now() + remaining, work);
}

/** Milliseconds until the invocation is cut off; Infinity outside an invocation with a deadline. */
export function remainingMs(): number {
  const deadline = deadlines.getStore();
  return deadline === undefined ? Number.POSITIVE_INFINITY : deadline - Date.now();
}

/** Whether work that may take up to `durationMs` would still end, with the reserve, before the cut-off. */
export function hasTimeFor(durationMs: number): boolean {
  return remainingMs() - FINISH_RESERVE_MS >= durationMs;
}
