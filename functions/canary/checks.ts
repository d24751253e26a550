/**
 * What the synthetic canaries check, against the public API only (no service code: a canary is a client). Each
 * check throws on the first thing that is wrong, which is what marks a CloudWatch Synthetics run as failed.
 */

export interface CanaryTarget {
  /** The API's base URL, with or without a trailing slash. */
  readonly baseUrl: string;
  /** A Bearer key of the account the canary uses. */
  readonly apiKey: string;
  /** A line per step, into the canary's log. @default console.log */
  readonly log?: (line: string) => void;
  /** @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Project names of the lifecycle canary's servers: a leftover of an interrupted run is recognised by it. */
export const CANARY_PROJECT_PREFIX = 'canary-';

/** A 429 is waited out this many times at most, each wait at most a minute. */
const MAX_RATE_LIMIT_WAITS = 3;

interface Answer {
  readonly status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the service's JSON answers, read field by field
  readonly body: any;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

class CanaryFailure extends Error {}

function client(target: CanaryTarget) {
  const base = target.baseUrl.replace(/\/+$/, '');
  const log = target.log ?? ((line: string) => console.log(line));
  const sleep = target.sleep ?? defaultSleep;
  async function call(method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
    for (let waits = 0; ; waits += 1) {
      const started = Date.now();
      const response = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${target.apiKey}`,
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      log(`${method} ${path} ${response.status} ${Date.now() - started} ms`);
      const retryAfter = Number(response.headers.get('retry-after'));
      if (response.status === 429 && waits < MAX_RATE_LIMIT_WAITS && retryAfter > 0 && retryAfter <= 60) {
        await sleep(retryAfter * 1000);
        continue;
      }
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // Kept as text: the expectation on it fails with what was received.
      }
      return { status: response.status, body };
    }
  }
  return { call, log, sleep };
}

function expectStatus(what: string, answer: Answer, ...expected: number[]): void {
  if (!expected.includes(answer.status)) {
    throw new CanaryFailure(
      `${what}: HTTP ${answer.status}, expected ${expected.join(' or ')}: ${JSON.stringify(answer.body).slice(0, 300)}`,
    );
  }
}

/**
 * The every-five-minutes check: the key lists its instances (a JSON array), and the OpenAPI document is served
 * (OpenAPI 3.1.0, with the instance paths).
 */
export async function checkApi(target: CanaryTarget): Promise<void> {
  const { call } = client(target);
  const list = await call('GET', '/api/v1/instances');
  expectStatus('list instances', list, 200);
  if (!Array.isArray(list.body)) throw new CanaryFailure(`list instances: not a JSON array: ${JSON.stringify(list.body).slice(0, 300)}`);
  const document = await call('GET', '/api/v1/openapi.json');
  expectStatus('OpenAPI document', document, 200);
  if (document.body?.openapi !== '3.1.0' || !document.body?.paths?.['/api/v1/instances']) {
    throw new CanaryFailure('OpenAPI document: not the OpenAPI 3.1.0 document of this API');
  }
}

export interface LifecycleOptions extends CanaryTarget {
  /** The flavor to create: the smallest, the cheapest to run for a few minutes. */
  readonly flavor: string;
  /** How long the server may take to become active. */
  readonly activeWithinMs: number;
  /** How long its delete job may take once asked. */
  readonly deletedWithinMs: number;
  /** Between two reads of a status. @default 5000 */
  readonly pollMs?: number;
  /** Names the server `canary-<runId>` and keys its create. @default the time */
  readonly runId?: string;
}

/**
 * The six-hourly check, on an account of its own: create the smallest server, wait until it is active, delete it
 * and wait until its delete job succeeded. The server is deleted whatever happened after its create was accepted;
 * servers that an interrupted earlier run left behind are deleted first.
 */
export async function createAndDelete(options: LifecycleOptions): Promise<void> {
  const { call, log, sleep } = client(options);
  const pollMs = options.pollMs ?? 5_000;
  const runId =
    options.runId ??
    new Date()
      .toISOString()
      .replace(/[^0-9]/g, '')
      .slice(0, 14);

  const waitFor = async <T>(what: string, withinMs: number, read: () => Promise<T | undefined>): Promise<T> => {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const value = await read();
      if (value !== undefined) return value;
      if (Date.now() + pollMs > deadline) throw new CanaryFailure(`${what}: not within ${Math.round(withinMs / 1000)} s`);
      await sleep(pollMs);
    }
  };
  const deleteInstance = async (id: number): Promise<string> => {
    const deleted = await call('DELETE', `/api/v1/instances/${id}`);
    expectStatus(`delete instance ${id}`, deleted, 200);
    return String(deleted.body.job_id);
  };
  const jobEnded = (jobId: string) => async () => {
    const job = await call('GET', `/api/v1/jobs/${jobId}`);
    expectStatus(`job ${jobId}`, job, 200);
    if (job.body.status === 'running') return undefined;
    if (job.body.status !== 'succeeded')
      throw new CanaryFailure(`job ${jobId} (${job.body.type}) ${job.body.status}: ${job.body.error ?? ''}`);
    return job.body;
  };

  const existing = await call('GET', '/api/v1/instances');
  expectStatus('list instances', existing, 200);
  for (const leftover of (existing.body as { instance_id: number; project_name: string; status: string }[]).filter(
    (instance) => instance.project_name.startsWith(CANARY_PROJECT_PREFIX) && instance.status !== 'deleting',
  )) {
    log(`deleting instance ${leftover.instance_id} left by an earlier run (${leftover.status})`);
    await deleteInstance(leftover.instance_id);
  }

  const created = await call('POST', '/api/v1/instances', {
    body: { project_name: `${CANARY_PROJECT_PREFIX}${runId}`, flavor: options.flavor },
    headers: { 'idempotency-key': `canary-${runId}` },
  });
  expectStatus('create instance', created, 202);
  const id = Number(created.body.instance_id);
  let failure: unknown;
  try {
    await waitFor(`instance ${id} active`, options.activeWithinMs, async () => {
      const detail = await call('GET', `/api/v1/instances/${id}`);
      expectStatus(`instance ${id}`, detail, 200);
      if (detail.body.status === 'failed') throw new CanaryFailure(`instance ${id} failed to provision`);
      return detail.body.status === 'active' ? detail.body : undefined;
    });
    log(`instance ${id} active`);
  } catch (error) {
    failure = error;
  }
  // Deleted whatever happened: a canary must not leave a server running (and billing) behind.
  const jobId = await deleteInstance(id);
  if (failure) throw failure;
  await waitFor(`delete job ${jobId}`, options.deletedWithinMs, jobEnded(jobId));
  const gone = await call('GET', `/api/v1/instances/${id}`);
  expectStatus(`instance ${id} after its delete`, gone, 404);
  log(`instance ${id} deleted`);
}
