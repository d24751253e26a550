import { setTimeout as sleep } from 'node:timers/promises';
import { UpstreamDeadlineError, UpstreamTransientError } from './driver';

export interface RetryOptions {
  readonly attempts?: number;
  /** Which transient errors are safe to send again (default: refusals only, see `refusedUnprocessed`). */
  readonly retryable?: (error: UpstreamTransientError) => boolean;
}

/** A 429 means the upstream refused the call unprocessed, so even a call that is not idempotent may be sent again. */
export const refusedUnprocessed = (error: UpstreamTransientError) => error.status === 429;

/**
 * Retries an upstream call with capped, fully jittered exponential backoff, only while a client waits for it (an
 * action's first upstream call): the one retry layer there is. Workflow steps never retry in process: their state
 * machine's Retry owns transient errors across invocations; the AWS SDK owns a single AWS call's throttling and
 * network errors (see the README's design notes). A call cut off by the deadline is never sent again here.
 */
export async function withTransientRetry<T>(
  call: () => Promise<T>,
  { attempts = 3, retryable = refusedUnprocessed }: RetryOptions = {},
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
