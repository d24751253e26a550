import { setTimeout as sleep } from 'node:timers/promises';
import { UpstreamTransientError } from './driver';

/**
 * Retries an upstream call on transient errors with capped, fully jittered exponential backoff. For calls made
 * while a client waits; workflow steps rely on the state machine's Retry instead.
 */
export async function withTransientRetry<T>(call: () => Promise<T>, attempts = 3, baseDelayMs = 200, maxDelayMs = 1_000): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof UpstreamTransientError) || attempt >= attempts) throw error;
      await sleep(Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)));
    }
  }
}
