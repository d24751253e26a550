import { writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { contractViolations } from './contract';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../infra/local/runtime';
import { issueApiKey, openAccount, usdToMicros } from '../../shared/domain/accounts';
import { deposit } from '../../shared/domain/billing';

export interface TestRuntime extends LocalRuntime {
  /** A fresh account with one key; confirmed, not suspended, $50 deposited unless told otherwise. */
  newAccount(options?: { depositUsd?: string; confirmed?: boolean; suspended?: boolean }): Promise<TestAccount>;
  /** Calls the local gateway. */
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  /** Creates an instance and waits until it is active. */
  activeInstance(apiKey: string, flavor?: string): Promise<Record<string, any>>;
  /** Polls a job until it has ended. */
  waitForJob(apiKey: string, jobId: string, timeoutMs?: number): Promise<Record<string, any>>;
  /** Polls `read` every 250 ms until it answers something (default: for 20 s). */
  waitFor<T>(what: string, read: () => Promise<T | undefined>, timeoutMs?: number): Promise<T>;
  /** Polls the instance detail until its status is one of `statuses`. */
  waitForStatus(apiKey: string, instanceId: number, statuses: string[], timeoutMs?: number): Promise<Record<string, unknown>>;
}

export interface TestAccount {
  readonly accountId: string;
  readonly apiKey: string;
  readonly keyId: number;
}

export interface CallOptions {
  readonly apiKey?: string;
  readonly body?: unknown;
  /** Sent as is, not JSON-encoded. */
  readonly rawBody?: string;
  readonly headers?: Record<string, string>;
}

export interface CallResult {
  readonly status: number;
  readonly headers: Headers;
  // Tests read arbitrary fields of JSON bodies.
  readonly body: any;
}

/**
 * The local runtime for one test file, on the run's shared DynamoDB Local under its own table prefix, with
 * short upstream boot and workflow waits so that lifecycles finish in about a second.
 */
export async function startTestRuntime(options: Partial<LocalRuntimeOptions> = {}): Promise<TestRuntime> {
  const runtime = await startLocalRuntime({
    dynamodbEndpoint: inject('dynamodbEndpoint'),
    tablePrefix: `t${randomBytes(5).toString('hex')}`,
    bootMs: 300,
    waitMs: 100,
    retryMs: 20,
    // Tests run the scheduled jobs themselves, when they mean to.
    schedules: false,
    ...options,
    // A lost answer is looked for again only briefly: the simulator acts at once, or after its injected latency.
    // Every test request comes from one loopback address, standing for many clients, and many send bad credentials
    // on purpose: failed authentications are still counted per address, but only the flood tests use the real limit.
    // A destroyed server is confirmed gone by reads over a second, not half a minute.
    env: { UNKNOWN_OUTCOME_WINDOW_SECONDS: '2', FAILED_AUTH_LIMIT: '1000000', DESTRUCTION_CONFIRM_WINDOW_SECONDS: '1', ...options.env },
  });

  async function call(method: string, path: string, { apiKey, body, rawBody, headers = {} }: CallOptions = {}): Promise<CallResult> {
    const response = await fetch(`${runtime.baseUrl}${path}`, {
      method,
      headers: {
        ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
        ...(body !== undefined || rawBody !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: rawBody ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
    const text = await response.text();
    const parsed = text ? JSON.parse(text) : undefined;
    const violations = contractViolations(method, path, response.status, response.headers, parsed);
    if (violations.length > 0) throw new Error(`response breaks the OpenAPI document:\n${violations.join('\n')}`);
    return { status: response.status, headers: response.headers, body: parsed };
  }

  async function poll<T>(what: string, read: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  async function waitForStatus(apiKey: string, instanceId: number, statuses: string[], timeoutMs = 20_000) {
    return poll(
      `instance ${instanceId} to be ${statuses.join(' or ')}`,
      async () => {
        const { status, body } = await call('GET', `/api/v1/instances/${instanceId}`, { apiKey });
        return status === 200 && statuses.includes(body.status) ? body : undefined;
      },
      timeoutMs,
    );
  }

  const helpers: Omit<TestRuntime, keyof LocalRuntime> = {
    call,
    waitFor: (what, read, timeoutMs = 20_000) => poll(what, read, timeoutMs),
    waitForStatus,
    async activeInstance(apiKey, flavor = 's-1vcpu-2gb') {
      const created = await call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'test', flavor } });
      if (created.status !== 202) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
      return waitForStatus(apiKey, created.body.instance_id, ['active']);
    },
    async waitForJob(apiKey, jobId, timeoutMs = 20_000) {
      return poll(
        `job ${jobId} to end`,
        async () => {
          const { status, body } = await call('GET', `/api/v1/jobs/${jobId}`, { apiKey });
          return status === 200 && body.status !== 'running' ? body : undefined;
        },
        timeoutMs,
      );
    },
    async newAccount({ depositUsd = '50', confirmed = true, suspended = false } = {}) {
      const account = await openAccount(runtime.deps, { email: `${randomBytes(4).toString('hex')}@example.com`, confirmed, suspended });
      if (usdToMicros(depositUsd) > 0) await deposit(runtime.deps, account.account_id, usdToMicros(depositUsd));
      const { fullKey, record } = await issueApiKey(runtime.deps, account.account_id, 'Test');
      return { accountId: account.account_id, apiKey: fullKey, keyId: record.id };
    },
  };
  // Copied as descriptors: the runtime's Step Functions endpoint is a getter that changes when the service restarts.
  return Object.defineProperties(helpers, Object.getOwnPropertyDescriptors(runtime)) as TestRuntime;
}

/**
 * The local runtime for the calling test file: started before its tests, stopped after them once every workflow
 * it started has finished. Fields are filled in when the file's tests start.
 */
export function useTestRuntime(options: Partial<LocalRuntimeOptions> = {}): TestRuntime {
  const runtime = {} as TestRuntime;
  beforeAll(async () => {
    Object.defineProperties(runtime, Object.getOwnPropertyDescriptors(await startTestRuntime(options)));
  });
  afterAll(async () => {
    await runtime.stepFunctions.idle();
    await runtime.stop();
  });
  return runtime;
}

/** Writes the runtime file the operations CLI reads (as `npm start` writes `.local/runtime.json`) for this runtime. */
export async function writeRuntimeFile(runtime: TestRuntime, file: string): Promise<void> {
  await writeFile(
    file,
    JSON.stringify({
      base_url: runtime.baseUrl,
      simulator_url: runtime.simulator.url,
      dynamodb_endpoint: inject('dynamodbEndpoint'),
      sfn_endpoint: runtime.stepFunctions.endpoint,
      table_prefix: runtime.tableNames.accounts.replace(/-accounts$/, ''),
      upstream_token: runtime.upstreamToken,
      secrets_key_file: runtime.secretsKeyFile,
    }),
  );
}
