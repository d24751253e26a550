import { setTimeout as sleep } from 'node:timers/promises';
import { UpstreamDeadlineError, UpstreamTransientError } from './driver';

export interface RetryOptions {
  readonly attempts?: number;
  /** Which transient errors are safe to retry (default: all of them). */
  readonly retryable?: (error: UpstreamTransientError) => boolean;
}

/** A 429 means the upstream refused the call unprocessed, so even a call that is not idempotent may be sent again. */
export const refusedUnprocessed = (error: UpstreamTransientError) => error.status === 429;

/**
 * Retries an upstream call on transient errors with capped, fully jittered exponential backoff. For calls made
 * while a client waits; workflow steps rely on the state machine's Retry instead.
 */
export async function withTransientRetry<T>(
  call: () => Promise<T>,
  { attempts = 3, retryable = () => true }: RetryOptions = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const retry = error instanceof UpstreamTransientError && !(error instanceof UpstreamDeadlineError) && retryable(error);
      if (!retry || attempt >= attempts) throw error;
      await sleep(Math.random() * Math.min(1_000, 200 * 2 ** (attempt - 1)));
    }
  }
}
