import { retry, retryPolicies, type RetryPolicy } from '../retry';
import { UpstreamDeadlineError, UpstreamTransientError } from './driver';

export interface UpstreamRetryOptions {
  readonly policy?: RetryPolicy;
  /** Which transient errors are safe to send again (default: refusals only, see `refusedUnprocessed`). */
  readonly retryable?: (error: UpstreamTransientError) => boolean;
}

/** A 429 means the upstream refused the call unprocessed, so even a call that is not idempotent may be sent again. */
export const refusedUnprocessed = (error: UpstreamTransientError) => error.status === 429;

/**
 * Retries an upstream call under the `upstreamRefused` policy, only while a client waits for it (an action's first
 * upstream call): the one retry layer there is. Workflow steps never retry in process: their state machine's Retry
 * owns transient errors across invocations; the AWS SDK owns a single AWS call's throttling and network errors (see
 * docs/architecture.md). A call cut off by the deadline is never sent again here.
 */
export function withTransientRetry<T>(
  call: () => Promise<T>,
  { policy = retryPolicies.upstreamRefused, retryable = refusedUnprocessed }: UpstreamRetryOptions = {},
): Promise<T> {
  return retry(policy, call, {
    retryable: (error) => error instanceof UpstreamTransientError && !(error instanceof UpstreamDeadlineError) && retryable(error),
  });
}
