import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The credentials a request was authenticated with. While a Bearer request runs, its writes carry conditions that
 * the key is still active and its account in standing, and its reads check them again, so that a key revoked (or
 * an account suspended) mid-request stops the request there: revocation applies to requests in flight.
 */
export interface RequestGuard {
  readonly keyHash: string;
  readonly accountId: string;
}

const guards = new AsyncLocalStorage<RequestGuard>();

export function runGuarded<T>(guard: RequestGuard, work: () => Promise<T>): Promise<T> {
  return guards.run(guard, work);
}

/** The guard of the request this code runs for; undefined outside a Bearer request (workflows, jobs, operators). */
export function currentGuard(): RequestGuard | undefined {
  return guards.getStore();
}

/** Runs `work` as no request's: for the clean-up a refused request still owes (it must not be refused in turn). */
export function runUnguarded<T>(work: () => Promise<T>): Promise<T> {
  return guards.exit(work);
}
