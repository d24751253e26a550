import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How an operation is tried again: at most `attempts` tries in all; before try n + 1 a pause drawn uniformly from
 * [0, min(capMs, baseMs · 2^(n − 1))) ("full jitter", so that callers that collided do not collide again in step).
 */
export interface RetryPolicy {
  /** Named in the error a caller gets when every try was spent. */
  readonly name: string;
  readonly attempts: number;
  readonly baseMs: number;
  readonly capMs: number;
}

/**
 * The service's retry policies, one per kind of failure worth a new try in process. Workflow steps otherwise leave
 * transient failures to their state machine's Retry (across invocations), and the AWS SDK retries a single call's
 * throttling and network errors itself: these are what remains.
 */
export const retryPolicies = {
  /** A client waits on an upstream call the upstream refused unprocessed (429): two more tries, within 0.2 and 0.4 s. */
  upstreamRefused: { name: 'upstream-refused', attempts: 3, baseMs: 200, capMs: 1_000 },
  /** DynamoDB failing transiently after the SDK's own tries: pauses of up to 0.4, 0.8 and 1.6 s ride out a blip. */
  dynamoTransient: { name: 'dynamodb-transient', attempts: 4, baseMs: 400, capMs: 1_600 },
  /** Transactions cancelled only because they collided with another on the same items (the SDK does not retry it). */
  transactionConflict: { name: 'transaction-conflict', attempts: 5, baseMs: 50, capMs: 400 },
  /** Keys of a batch read DynamoDB left unprocessed (it was throttled): asked for again, backing off. */
  unprocessedKeys: { name: 'unprocessed-keys', attempts: 12, baseMs: 50, capMs: 1_600 },
  /**
   * Read, decide, write on condition that nothing changed since the read: a failed condition means another writer
   * came first, so read and decide again at once (the other writer finished; there is nothing to wait for).
   */
  versionConflict: { name: 'version-conflict', attempts: 10, baseMs: 0, capMs: 0 },
  /** A customer's request racing others on one instance: fewer tries, it has a client waiting. */
  requestVersionConflict: { name: 'request-version-conflict', attempts: 5, baseMs: 0, capMs: 0 },
} as const satisfies Record<string, RetryPolicy>;

/** An attempt answers this when what it read changed under it: the operation is tried again under its policy. */
export const TRY_AGAIN: unique symbol = Symbol('try again');
export type TryAgain = typeof TRY_AGAIN;

/** Every try of an operation was spent on changes under it (no try failed). */
export class RetriesExhaustedError extends Error {
  constructor(readonly policy: RetryPolicy) {
    super(`gave up after ${policy.attempts} tries (${policy.name})`);
    this.name = 'RetriesExhaustedError';
  }
}

export interface RetryOptions<T> {
  /** Whether an error an attempt threw is worth another try; by default none is, and it is passed on at once. */
  readonly retryable?: (error: unknown) => boolean;
  /** The answer when every try said TRY_AGAIN; by default RetriesExhaustedError is thrown. */
  readonly exhausted?: () => T;
  /** Whether there is time to pause this long first (the invocation's deadline): when not, the last error stands. */
  readonly canPause?: (ms: number) => boolean;
}

/** The pause before try `attempt + 1` under `policy`. */
export function retryPauseMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  return random() * Math.min(policy.capMs, policy.baseMs * 2 ** (attempt - 1));
}

/**
 * Runs `attempt` (given its number, from 1) until it answers something other than TRY_AGAIN, under `policy`: a
 * retryable error or a TRY_AGAIN is followed by the policy's pause and another try, while tries are left.
 */
export async function retry<T>(
  policy: RetryPolicy,
  attempt: (n: number) => Promise<T | TryAgain>,
  { retryable = () => false, exhausted, canPause = () => true }: RetryOptions<T> = {},
): Promise<T> {
  for (let n = 1; ; n++) {
    const last = n >= policy.attempts;
    try {
      const answer = await attempt(n);
      if (answer !== TRY_AGAIN) return answer;
      if (last) {
        if (exhausted) return exhausted();
        throw new RetriesExhaustedError(policy);
      }
    } catch (error) {
      if (error instanceof RetriesExhaustedError || last || !retryable(error)) throw error;
      const pauseMs = retryPauseMs(policy, n);
      if (!canPause(pauseMs)) throw error;
      if (pauseMs > 0) await sleep(pauseMs);
      continue;
    }
    const pauseMs = retryPauseMs(policy, n);
    if (pauseMs > 0) await sleep(pauseMs);
  }
}
