import { describe, expect, it, vi } from 'vitest';
import { RetriesExhaustedError, retry, retryPauseMs, retryPolicies, TRY_AGAIN, type RetryPolicy } from '../../shared/retry';

const quick: RetryPolicy = { name: 'quick', attempts: 4, baseMs: 1, capMs: 2 };
const transient = new Error('connection reset');

describe('retry', () => {
  it('answers with the first try when it succeeds', async () => {
    const attempt = vi.fn(async () => 'done');

    await expect(retry(quick, attempt)).resolves.toBe('done');
    expect(attempt).toHaveBeenCalledTimes(1);
  });

  it('tries again while the attempt answers TRY_AGAIN, numbering the tries from 1', async () => {
    const seen: number[] = [];

    const answer = await retry(quick, async (n) => (seen.push(n), n < 3 ? TRY_AGAIN : `settled on ${n}`));

    expect(answer).toBe('settled on 3');
    expect(seen).toEqual([1, 2, 3]);
  });

  it('throws RetriesExhaustedError naming the policy when every try said TRY_AGAIN', async () => {
    const attempt = vi.fn(async () => TRY_AGAIN);

    const failure = await retry(quick, attempt).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(RetriesExhaustedError);
    expect((failure as Error).message).toBe('gave up after 4 tries (quick)');
    expect(attempt).toHaveBeenCalledTimes(4);
  });

  it('answers with `exhausted` when every try said TRY_AGAIN and one is given', async () => {
    await expect(retry(quick, async () => TRY_AGAIN, { exhausted: () => 'gave up' })).resolves.toBe('gave up');
  });

  it('passes an error on at once when it is not retryable', async () => {
    const attempt = vi.fn(async () => {
      throw new Error('refused');
    });

    await expect(retry(quick, attempt, { retryable: () => false })).rejects.toThrow('refused');
    expect(attempt).toHaveBeenCalledTimes(1);
  });

  it('tries a retryable error again, and passes on the last one when the tries are spent', async () => {
    const attempt = vi.fn(async () => {
      throw transient;
    });

    await expect(retry(quick, attempt, { retryable: (error) => error === transient })).rejects.toBe(transient);
    expect(attempt).toHaveBeenCalledTimes(4);
  });

  it('recovers when a retryable error is followed by success', async () => {
    const attempt = vi.fn().mockRejectedValueOnce(transient).mockResolvedValueOnce('after one blip');

    await expect(retry(quick, attempt, { retryable: () => true })).resolves.toBe('after one blip');
    expect(attempt).toHaveBeenCalledTimes(2);
  });

  it('stops at the error when there is no time left for the pause', async () => {
    const attempt = vi.fn(async () => {
      throw transient;
    });

    await expect(retry(retryPolicies.dynamoTransient, attempt, { retryable: () => true, canPause: () => false })).rejects.toBe(transient);
    expect(attempt).toHaveBeenCalledTimes(1);
  });
});

describe('retryPauseMs', () => {
  it.each([
    // policy, try that failed, largest pause before the next
    ['dynamoTransient', 1, 400],
    ['dynamoTransient', 2, 800],
    ['dynamoTransient', 3, 1_600],
    ['transactionConflict', 1, 50],
    ['transactionConflict', 4, 400],
    ['upstreamRefused', 1, 200],
    ['upstreamRefused', 2, 400],
    ['unprocessedKeys', 10, 1_600],
    ['versionConflict', 5, 0],
  ] as const)('under %s, after try %i, pauses less than %i ms', (name, attempt, largest) => {
    expect(retryPauseMs(retryPolicies[name], attempt, () => 0.999_999)).toBeCloseTo(largest, 0);
    expect(retryPauseMs(retryPolicies[name], attempt, () => 0)).toBe(0);
  });
});
