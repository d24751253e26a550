import type { Deps } from '../../shared/domain/deps';
import { hasTimeFor, remainingMs } from '../../shared/deadline';
import { unitDeps } from '../support/unit-deps';
import { DigitalOceanDriver } from '../../shared/upstream/digitalocean';
import { UpstreamDeadlineError, UpstreamTransientError } from '../../shared/upstream/driver';
import { tokenCache } from '../../shared/domain/upstream';
import { withTransientRetry } from '../../shared/upstream/retry';
import { scheduledJob, workflowStep } from '../../shared/entry-points';
import { provisionInputSchema } from '../../shared/domain/step-inputs';

const CALL_TIMEOUT_MS = 2_000;
/** Each upstream call takes this long on the (fake) clock. */
const CALL_TAKES_MS = 1_000;

/**
 * A driver over a fetch that answers an empty droplet list after advancing the clock, counting the calls it saw; its
 * calls start only while the invocation `deps` runs for has time for them (none given: no invocation).
 */
function slowUpstream(status = 200, deps: Deps = unitDeps()) {
  const calls: string[] = [];
  const fetchImpl = (async (url: URL) => {
    calls.push(url.pathname);
    vi.setSystemTime(Date.now() + CALL_TAKES_MS);
    return new Response(JSON.stringify(status === 200 ? { droplets: [] } : { message: 'slow down' }), { status });
  }) as typeof fetch;
  const driver = new DigitalOceanDriver({
    baseUrl: 'http://127.0.0.1:9',
    token: 'token-a',
    timeoutMs: CALL_TIMEOUT_MS,
    hasTimeFor: (ms) => hasTimeFor(deps, ms),
    fetchImpl,
  });
  return { driver, calls };
}

/** A Lambda context whose clock runs out `ms` from now. */
function contextWithRemaining(ms: number) {
  const deadline = Date.now() + ms;
  return { getRemainingTimeInMillis: () => deadline - Date.now() };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('deadline', () => {
  it('stops starting upstream calls when the invocation could not finish them', async () => {
    const calls: string[] = [];
    // 5 s left: a 2 s call needs 3.5 s with the 1.5 s reserve, so two calls start and the third does not.
    const step = workflowStep(provisionInputSchema, async (deps: Deps) => {
      const upstream = slowUpstream(200, deps);
      try {
        for (let call = 0; call < 5; call++) await upstream.driver.listServersByTag('instance-1');
      } finally {
        calls.push(...upstream.calls);
      }
    }).forRuntime(unitDeps());

    const failure = await step({ job_id: 'job-1', instance_id: 1 }, contextWithRemaining(5_000)).catch((error: unknown) => error);

    expect(calls).toHaveLength(2);
    expect(failure).toBeInstanceOf(UpstreamDeadlineError);
    expect((failure as Error).name).toBe('UpstreamTransientError');
    expect((failure as Error).message).toBe(
      'DigitalOcean GET /v2/droplets not started: the invocation ends before its 2000 ms could run out',
    );
  });

  it('starts every call outside an invocation with a deadline', async () => {
    const { driver, calls } = slowUpstream();

    for (let call = 0; call < 5; call++) await driver.listServersByTag('instance-1');

    expect(calls).toHaveLength(5);
  });

  it('is not retried by the in-request retry, which would only be refused again', async () => {
    let calls: string[] = [];
    const attempt = vi.fn();
    const job = scheduledJob((deps: Deps) => {
      const upstream = slowUpstream(429, deps);
      calls = upstream.calls;
      attempt.mockImplementation(() => upstream.driver.listServersByTag('instance-1'));
      return withTransientRetry(attempt, { policy: { name: 'test', attempts: 5, baseMs: 200, capMs: 1_000 } });
    }).forRuntime(unitDeps());

    const failure = await job(undefined, contextWithRemaining(6_000)).catch((error: unknown) => error);

    // 6 s: three 429s take 3 s; with 3 s left the fourth attempt is refused before sending, and not tried again.
    expect(calls).toHaveLength(3);
    expect(attempt).toHaveBeenCalledTimes(4);
    expect(failure).toBeInstanceOf(UpstreamDeadlineError);
  });

  it.each([
    ['a workflow step', (check: (deps: Deps) => Promise<number>) => workflowStep(provisionInputSchema, check).forRuntime(unitDeps())],
    ['a scheduled job', (check: (deps: Deps) => Promise<number>) => scheduledJob(check).forRuntime(unitDeps())],
  ])('gives %s the time its invocation has left', async (_kind, wrap) => {
    const handler = wrap(async (deps) => remainingMs(deps)) as (input: unknown, context: unknown) => Promise<number>;

    const seen = await handler({ job_id: 'job-1', instance_id: 1 }, contextWithRemaining(7_000));

    expect(seen).toBe(7_000);
  });

  it('a transient error from the upstream itself is still an ordinary transient error', async () => {
    const { driver } = slowUpstream(429);

    const failure = await driver.listServersByTag('instance-1').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(UpstreamTransientError);
    expect(failure).not.toBeInstanceOf(UpstreamDeadlineError);
  });
});

describe('tokenCache', () => {
  it('reads the token once and again only after the upstream refused it', async () => {
    const values = ['old-token', 'new-token'];
    const read = vi.fn(async () => values.shift() ?? 'exhausted');
    const cache = tokenCache(read);

    expect(await cache.current()).toBe('old-token');
    expect(await cache.current()).toBe('old-token');
    const [first, second] = await Promise.all([cache.reread('old-token'), cache.reread('old-token')]);

    expect([first, second]).toEqual(['new-token', 'new-token']);
    expect(await cache.reread('old-token')).toBe('new-token');
    expect(read).toHaveBeenCalledTimes(2);
  });

  it('reads again after a failed read', async () => {
    const read = vi.fn().mockRejectedValueOnce(new Error('throttled')).mockResolvedValueOnce('token-a');
    const cache = tokenCache(read);

    await expect(cache.current()).rejects.toThrow('throttled');
    expect(await cache.current()).toBe('token-a');
  });
});
