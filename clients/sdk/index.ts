import { randomUUID } from 'node:crypto';
import createClient from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import type { components, paths } from './schema.js';

export { flavorValues } from './schema.js';
export type Flavor = components['schemas']['Flavor'];
export type Instance = components['schemas']['InstanceDetail'];
export type InstanceSummary = components['schemas']['InstanceSummary'];
export type InstanceStatus = Instance['status'];
export type Job = components['schemas']['Job'];
export type ActionResult = components['schemas']['ActionResult'];
export type DeleteResult = components['schemas']['DeleteResult'];
export type ApiKeyInfo = components['schemas']['ApiKeyInfo'];
export type CreatedApiKey = components['schemas']['CreatedApiKey'];
export type CreateInstanceBody = paths['/api/v1/instances']['post']['requestBody']['content']['application/json'];
export type UpdateInstanceBody = paths['/api/v1/instances/{instance_id}']['patch']['requestBody']['content']['application/json'];
/** The list's filters: `status` (comma-separated), `name` (exact), `label_selector` (`env=prod,tier!=db,gpu,!legacy`). */
export type InstanceFilters = Pick<
  NonNullable<paths['/api/v1/instances']['get']['parameters']['query']>,
  'status' | 'name' | 'label_selector'
>;
export type Billing = components['schemas']['Billing'];
export type Account = paths['/api/v1/account']['get']['responses'][200]['content']['application/json'];
export type ServiceEvent = components['schemas']['ServiceEvent'];
/** A console session opened by `signIn`: the cookie's value and its CSRF token, for key management. */
export interface SignedIn {
  readonly account_id: string;
  readonly email: string;
  readonly session: string;
  readonly csrf_token: string;
  readonly expires_at: string;
}
export type TopUp = components['schemas']['TopUp'];
export type AutoRechargeBody = paths['/api/v1/billing/auto-recharge']['post']['requestBody']['content']['application/json'];
export interface FlavorPlan {
  readonly flavor: Flavor;
  readonly vcpu: number;
  readonly ram_mb: number;
  readonly disk_gb: number;
  readonly hourly_price: number;
}

/** The service's refusal: its status, its `error` text, and its whole body (a 409's `message`, `status`, `running_action`…). */
export class VpsApiError extends Error {
  /** The readable explanation beside `error`, when the service gives one (`Cannot power on while the instance is active`). */
  readonly explanation: string | undefined;

  constructor(
    readonly status: number,
    readonly error: string,
    readonly requestId: string | undefined,
    /** Seconds to wait, on a 429. */
    readonly retryAfter?: number,
    /** The response body as the service sent it. */
    readonly body: Readonly<Record<string, unknown>> = {},
  ) {
    const explanation = typeof body.message === 'string' && body.message !== error ? body.message : undefined;
    super(`${error}${explanation ? `: ${explanation}` : ''} (HTTP ${status}${requestId ? `, request id ${requestId}` : ''})`);
    this.name = 'VpsApiError';
    this.explanation = explanation;
  }
}

/**
 * The service could not be reached, or the connection dropped before an answer: `url` says where. A write sent
 * without an Idempotency-Key may or may not have been carried out (`outcomeUnknown`); retry it with one.
 */
export class VpsConnectionError extends Error {
  constructor(
    readonly url: string,
    /** False when the request was a write that may have been carried out before the connection dropped. */
    readonly retried: boolean,
    cause: unknown,
  ) {
    super(`cannot reach the service at ${new URL(url).origin}`, { cause });
    this.name = 'VpsConnectionError';
  }

  get outcomeUnknown(): boolean {
    return !this.retried;
  }
}

export class JobFailedError extends Error {
  constructor(readonly job: Job) {
    super(
      `${job.type} job ${job.job_id} failed: ${job.failure ? `${job.failure.message} (${job.failure.code})` : (job.error ?? 'no reason given')}`,
    );
    this.name = 'JobFailedError';
  }
}

export class TopUpFailedError extends Error {
  constructor(readonly topUp: TopUp) {
    super(`top-up ${topUp.top_up_id} ended ${topUp.status}${topUp.failure_reason ? `: ${topUp.failure_reason}` : ''}`);
    this.name = 'TopUpFailedError';
  }
}

export class InstanceFailedError extends Error {
  constructor(readonly instance: Instance) {
    super(
      `instance ${instance.instance_id} ended failed${instance.failure ? `: ${instance.failure.message} (${instance.failure.code})` : ''}`,
    );
    this.name = 'InstanceFailedError';
  }
}

export interface RateLimitedEvent {
  readonly waitSeconds: number;
  /** 1 for the first retry. */
  readonly attempt: number;
  readonly maxAttempts: number;
}

export interface VpsClientOptions {
  /** The service's origin, for example `http://127.0.0.1:8080`. */
  readonly baseUrl: string;
  /** A Bearer API key, for instance and job calls. */
  readonly apiKey?: string;
  /** A browser session and its CSRF token, for key management. */
  readonly session?: string;
  readonly csrfToken?: string;
  /** How many times a request refused with 429 is sent again after its Retry-After (default 3). */
  readonly rateLimitRetries?: number;
  /** A 429 asking for a longer wait than this is not waited out but thrown (default 60 s, one general window). */
  readonly maxRetryAfterSeconds?: number;
  /** Told before each wait on a 429. */
  readonly onRateLimited?: (event: RateLimitedEvent) => void;
  /**
   * How many times a keyed request whose outcome is not known yet (504 "Outcome unknown", or 409 while the first
   * request with its key is still in progress) is sent again with the same key, after its Retry-After (default 10).
   */
  readonly pendingOutcomeRetries?: number;
  /** First and longest pause between polls while waiting (default 500 ms, growing by half each poll to 5 s). */
  readonly pollIntervalMs?: { readonly initial: number; readonly max: number };
  readonly fetch?: (request: Request) => Promise<Response>;
}

export interface WaitOptions<T> {
  /** Told of every status seen that differs from the one before, the first included. */
  readonly onStatus?: (status: string, value: T) => void;
  /** Gives up with an error after this long (default 15 minutes). */
  readonly timeoutMs?: number;
}

export interface CallOptions {
  /** Sent as Idempotency-Key; a fresh one is made when not given, so that retries of this call never repeat it. */
  readonly idempotencyKey?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The `page_token` of a `Link: <…?per_page=N&page_token=T>; rel="next"` header; undefined on the last page. */
function nextPageToken(link: string | null): string | undefined {
  const next = link?.split(',').find((part) => /;\s*rel="?next"?/.test(part));
  const target = next?.match(/<([^>]*)>/)?.[1];
  return target === undefined ? undefined : (new URL(target, 'http://link.invalid').searchParams.get('page_token') ?? undefined);
}

/** A webhook delivery's signature did not verify (wrong secret, altered body, or a timestamp over five minutes off). */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

/**
 * Checks a webhook delivery's Standard Webhooks signature (`webhook-id`, `webhook-timestamp`, `webhook-signature`
 * headers) with the endpoint's `whsec_…` secret and returns its event; throws WebhookVerificationError otherwise.
 * Pass the body exactly as received (the raw text, not re-serialised JSON).
 */
export function verifyWebhook(
  body: string,
  headers: Readonly<Record<string, string | readonly string[] | undefined>> | Headers,
  secret: string,
): ServiceEvent {
  const header = (name: string) => {
    const value = headers instanceof Headers ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()]);
    return Array.isArray(value) ? String(value[0]) : typeof value === 'string' ? value : '';
  };
  try {
    return new Webhook(secret).verify(body, {
      'webhook-id': header('webhook-id'),
      'webhook-timestamp': header('webhook-timestamp'),
      'webhook-signature': header('webhook-signature'),
    }) as ServiceEvent;
  } catch (error) {
    throw new WebhookVerificationError(error instanceof Error ? error.message : 'the signature does not verify', { cause: error });
  }
}

/** What fetch throws when the connection failed or dropped (undici's "fetch failed"), as opposed to a bug. */
const isNetworkError = (error: unknown) => error instanceof TypeError && error.message === 'fetch failed';

const IN_PROGRESS = 'A request with this Idempotency-Key is still in progress';

/** Whether the answer says the outcome of the request's key is not known yet. */
async function outcomePending(response: Response): Promise<boolean> {
  if (response.status === 504) return true;
  if (response.status !== 409) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => ({}))) as { message?: unknown };
  return body.message === IN_PROGRESS;
}

/** The wait a 429 asks for; a second when it names none (the gateway's own throttle sends no Retry-After). */
function retryAfterSeconds(response: Response): number {
  const header = response.headers.get('retry-after');
  const seconds = header === null || header.trim() === '' ? Number.NaN : Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : 1;
}

/**
 * A typed client for the VPS Provisioning Service, generated from its OpenAPI document, with the things every
 * caller needs: waiting for instances and jobs, idempotent creates and actions, and 429s waited out.
 */
export function createVpsClient(options: VpsClientOptions) {
  const baseFetch = options.fetch ?? ((request: Request) => fetch(request));
  const maxAttempts = options.rateLimitRetries ?? 3;
  const maxRetryAfter = options.maxRetryAfterSeconds ?? 60;
  const maxPendingRetries = options.pendingOutcomeRetries ?? 10;
  const poll = options.pollIntervalMs ?? { initial: 500, max: 5_000 };

  /**
   * Sends the request again after each 429, as long as the wait asked for is reasonable, and after a dropped
   * connection when sending it twice cannot do anything twice (a read, or a write with an Idempotency-Key).
   */
  async function fetchRetryingSafely(request: Request): Promise<Response> {
    const keyed = request.headers.has('idempotency-key');
    const repeatable = request.method === 'GET' || keyed;
    for (let rateLimited = 0, dropped = 0, pending = 0; ;) {
      let response: Response;
      try {
        response = await baseFetch(request.clone());
      } catch (error) {
        if (!isNetworkError(error)) throw error;
        if (!repeatable || ++dropped > 2) throw new VpsConnectionError(request.url, repeatable, error);
        await sleep(200 * dropped);
        continue;
      }
      const waitSeconds = retryAfterSeconds(response);
      // The first request may still commit: the same key gets its real answer once it has.
      if (keyed && pending < maxPendingRetries && waitSeconds <= maxRetryAfter && (await outcomePending(response))) {
        await response.body?.cancel();
        pending += 1;
        await sleep(waitSeconds * 1000);
        continue;
      }
      if (response.status !== 429 || rateLimited >= maxAttempts || waitSeconds > maxRetryAfter) return response;
      await response.body?.cancel();
      rateLimited += 1;
      options.onRateLimited?.({ waitSeconds, attempt: rateLimited, maxAttempts });
      await sleep(waitSeconds * 1000);
    }
  }

  const http = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    fetch: fetchRetryingSafely,
    headers: {
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      ...(options.session ? { cookie: `session=${options.session}` } : {}),
      ...(options.csrfToken ? { 'x-csrftoken': options.csrfToken } : {}),
    },
  });

  /** The data of a success, or the service's refusal as a VpsApiError. */
  function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
    if (result.error === undefined && result.response.ok) return result.data as T;
    const body = (result.error && typeof result.error === 'object' ? result.error : {}) as Record<string, unknown>;
    throw new VpsApiError(
      result.response.status,
      typeof body.error === 'string' ? body.error : result.response.statusText,
      typeof body.request_id === 'string' ? body.request_id : (result.response.headers.get('x-request-id') ?? undefined),
      result.response.status === 429 ? retryAfterSeconds(result.response) : undefined,
      body,
    );
  }

  const idempotency = (call: CallOptions) => ({ 'Idempotency-Key': call.idempotencyKey ?? randomUUID() });
  const instancePath = (instanceId: number) => ({ path: { instance_id: instanceId } });

  async function act(
    instanceId: number,
    body: paths['/api/v1/instances/{instance_id}/actions']['post']['requestBody']['content']['application/json'],
    call: CallOptions,
  ) {
    return unwrap(
      await http.POST('/api/v1/instances/{instance_id}/actions', {
        params: { ...instancePath(instanceId), header: idempotency(call) },
        body,
      }),
    );
  }

  /** Polls `read` with growing pauses until `done` says stop; a 429 while polling waits out its Retry-After. */
  async function waitFor<T>(
    read: () => Promise<T>,
    statusOf: (value: T) => string,
    done: (value: T) => boolean,
    wait: WaitOptions<T>,
  ): Promise<T> {
    const deadline = Date.now() + (wait.timeoutMs ?? 15 * 60_000);
    let pause = poll.initial;
    let last: string | undefined;
    for (;;) {
      let value: T | undefined;
      try {
        value = await read();
      } catch (error) {
        if (!(error instanceof VpsApiError && error.status === 429 && error.retryAfter !== undefined)) throw error;
        await sleep(error.retryAfter * 1000);
      }
      if (value !== undefined) {
        const status = statusOf(value);
        if (status !== last) wait.onStatus?.(status, value);
        last = status;
        if (done(value)) return value;
      }
      if (Date.now() + pause > deadline)
        throw new Error(`gave up waiting after ${Math.round((wait.timeoutMs ?? 0) / 1000)} s; last status ${last ?? 'unknown'}`);
      await sleep(pause);
      pause = Math.min(poll.max, Math.round(pause * 1.5));
    }
  }

  /** Each instance, page by page (`perPage` at a time), following the `Link: rel="next"` the service sends. */
  async function* eachInstance(filters: InstanceFilters, perPage: number): AsyncGenerator<InstanceSummary, void, undefined> {
    let pageToken: string | undefined;
    do {
      const result = await http.GET('/api/v1/instances', {
        params: { query: { ...filters, per_page: perPage, ...(pageToken === undefined ? {} : { page_token: pageToken }) } },
      });
      yield* unwrap(result);
      pageToken = nextPageToken(result.response.headers.get('link'));
    } while (pageToken !== undefined);
  }

  const client = {
    /** The service's origin this client calls. */
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    instances: {
      /**
       * Every instance (with `filters`, those that match), fetched a page at a time as the loop asks for them:
       * `for await (const instance of client.instances.list()) …`.
       */
      list: (filters: InstanceFilters = {}, { perPage = 100 }: { perPage?: number } = {}): AsyncIterable<InstanceSummary> =>
        eachInstance(filters, perPage),
    },
    /** Signs in with the account's e-mail address and password: the session the key routes need (`listKeys`…). */
    async signIn(email: string, password: string): Promise<SignedIn> {
      const result = await http.POST('/api/v1/auth/sign-in', { body: { email, password } });
      const info = unwrap(result);
      const session = result.response.headers
        .getSetCookie()
        .map((cookie) => /^session=([^;]+)/.exec(cookie)?.[1])
        .find((value) => value !== undefined);
      if (!session) throw new Error('the service signed in but set no session cookie');
      return { account_id: info.account_id, email: info.email, session, csrf_token: info.csrf_token, expires_at: info.expires_at };
    },
    /** Who the key (or session) belongs to: the account's id and e-mail address, its standing and balance. */
    async getAccount(): Promise<Account> {
      return unwrap(await http.GET('/api/v1/account'));
    },
    /** The caller's instances; with `filters`, only those in these statuses, with this name, matching this label selector. */
    async listInstances(filters: InstanceFilters = {}): Promise<InstanceSummary[]> {
      return unwrap(await http.GET('/api/v1/instances', { params: { query: filters } }));
    },
    /** Renames an instance and/or merges its labels (a null value removes a label). */
    async updateInstance(instanceId: number, body: UpdateInstanceBody, call: CallOptions = {}): Promise<Instance> {
      return unwrap(
        await http.PATCH('/api/v1/instances/{instance_id}', { params: { ...instancePath(instanceId), header: idempotency(call) }, body }),
      );
    },
    async getInstance(instanceId: number): Promise<Instance> {
      return unwrap(await http.GET('/api/v1/instances/{instance_id}', { params: instancePath(instanceId) }));
    },
    async createInstance(body: CreateInstanceBody, call: CallOptions = {}): Promise<Instance> {
      return unwrap(await http.POST('/api/v1/instances', { params: { header: idempotency(call) }, body }));
    },
    async deleteInstance(instanceId: number): Promise<DeleteResult> {
      return unwrap(await http.DELETE('/api/v1/instances/{instance_id}', { params: instancePath(instanceId) }));
    },
    powerOn: (instanceId: number, call: CallOptions = {}): Promise<ActionResult> => act(instanceId, { type: 'power_on' }, call),
    powerOff: (instanceId: number, call: CallOptions = {}): Promise<ActionResult> => act(instanceId, { type: 'power_off' }, call),
    reboot: (instanceId: number, call: CallOptions = {}): Promise<ActionResult> => act(instanceId, { type: 'reboot' }, call),
    resize: (instanceId: number, flavor: Flavor, call: CallOptions = {}): Promise<ActionResult> =>
      act(instanceId, { type: 'resize', flavor }, call),
    /** The instance's latest 50 jobs, newest first. */
    async listInstanceJobs(instanceId: number): Promise<Job[]> {
      return unwrap(await http.GET('/api/v1/instances/{instance_id}/jobs', { params: instancePath(instanceId) }));
    },
    async getJob(jobId: string): Promise<Job> {
      return unwrap(await http.GET('/api/v1/jobs/{job_id}', { params: { path: { job_id: jobId } } }));
    },
    async listKeys(): Promise<ApiKeyInfo[]> {
      return unwrap(await http.GET('/api/v1/keys'));
    },
    async createKey(name?: string): Promise<CreatedApiKey> {
      return unwrap(await http.POST('/api/v1/keys', { body: name === undefined ? {} : { name } }));
    },
    async revokeKey(keyId: number): Promise<{ ok: boolean; id: number }> {
      return unwrap(await http.DELETE('/api/v1/keys/{key_id}', { params: { path: { key_id: keyId } } }));
    },
    /** The balance, the burn rate and the runway, auto-recharge and the latest top-ups. */
    async getBilling(): Promise<Billing> {
      return unwrap(await http.GET('/api/v1/billing'));
    },
    /** Opens a card top-up: pay on its `checkout_url`; the balance is credited when the provider confirms the payment. */
    async createTopUp(amountUsd: number, { saveCard }: { saveCard?: boolean } = {}): Promise<TopUp> {
      return unwrap(
        await http.POST('/api/v1/billing/top-ups', { body: { amount_usd: amountUsd, ...(saveCard ? { save_card: true } : {}) } }),
      );
    },
    async getTopUp(topUpId: string): Promise<TopUp> {
      return unwrap(await http.GET('/api/v1/billing/top-ups/{top_up_id}', { params: { path: { top_up_id: topUpId } } }));
    },
    async setAutoRecharge(body: AutoRechargeBody): Promise<Billing> {
      return unwrap(await http.POST('/api/v1/billing/auto-recharge', { body }));
    },
    /** Polls the top-up until it is paid (credited); one that expires or fails throws TopUpFailedError. */
    waitForTopUp(topUpId: string, wait: WaitOptions<TopUp> = {}): Promise<TopUp> {
      return waitFor(
        () => client.getTopUp(topUpId),
        (topUp) => topUp.status,
        (topUp) => {
          if (topUp.status === 'expired' || topUp.status === 'failed') throw new TopUpFailedError(topUp);
          return topUp.status === 'paid';
        },
        wait,
      );
    },
    /** The orderable flavors and their plans, as the service's document describes them today. */
    async flavors(): Promise<FlavorPlan[]> {
      const document = unwrap(await http.GET('/api/v1/openapi.json')) as {
        components: { schemas: { Flavor: { 'x-plans': Record<Flavor, Omit<FlavorPlan, 'flavor'>> } } };
      };
      return Object.entries(document.components.schemas.Flavor['x-plans']).map(([flavor, plan]) => ({ flavor: flavor as Flavor, ...plan }));
    },
    /**
     * Polls the instance until its status is one of `statuses`. An instance that ends `failed` when that was not
     * asked for throws InstanceFailedError; a 404 (deleted meanwhile) throws VpsApiError.
     */
    waitForInstance(instanceId: number, statuses: readonly InstanceStatus[], wait: WaitOptions<Instance> = {}): Promise<Instance> {
      return waitFor(
        () => client.getInstance(instanceId),
        (instance) => instance.status,
        (instance) => {
          if (statuses.includes(instance.status)) return true;
          if (instance.status === 'failed') throw new InstanceFailedError(instance);
          return false;
        },
        wait,
      );
    },
    /** Polls the job until it ends: resolves when it succeeded, throws JobFailedError when it failed. */
    waitForJob(jobId: string, wait: WaitOptions<Job> = {}): Promise<Job> {
      return waitFor(
        () => client.getJob(jobId),
        (job) => job.status,
        (job) => {
          if (job.status === 'failed') throw new JobFailedError(job);
          return job.status === 'succeeded';
        },
        wait,
      );
    },
  };
  return client;
}

export type VpsClient = ReturnType<typeof createVpsClient>;
