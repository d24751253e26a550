import * as z from '../model/zod';
import { metricNames } from '../metric-names';
import { countMetric } from '../observability';
import { holdAfterThrottle } from '../model/upstream-budget';
import {
  UpstreamBudgetSpentError,
  UpstreamDeadlineError,
  UpstreamCapacityError,
  UpstreamPermanentError,
  UpstreamTransientError,
  type CreateServerRequest,
  type UpstreamActionRequest,
  type UpstreamDriver,
} from './driver';
import { type UpstreamAction, type UpstreamActionRecord, type UpstreamServer } from '../model/server';

/** DigitalOcean's refusals for want of room: the size is not available in the region, or the droplet limit is reached. */
const NO_ROOM = /not available in this region|exceed your droplet limit/i;

export interface DigitalOceanDriverOptions {
  /** API origin, e.g. `https://api.digitalocean.com`. Every request, next-page links included, goes here. */
  readonly baseUrl: string;
  readonly token: string;
  /**
   * Reads the token again after the upstream answered 401 to `stale` (an operator may have replaced it); the
   * call is then sent once more with the token it returns. Without it a 401 is final.
   */
  readonly rereadToken?: (stale: string) => Promise<string>;
  /** Limit for each HTTP call, response body included; no call starts unless the invocation has this long left. */
  readonly timeoutMs: number;
  /** Whether the invocation has this long left (default: always). */
  readonly hasTimeFor?: (ms: number) => boolean;
  /** Region for new droplets. */
  readonly region?: string;
  /** Page size for listings; DigitalOcean allows 1 to 200. */
  readonly perPage?: number;
  readonly fetchImpl?: typeof fetch;
  /** Asked before each call is sent (the shared request budget); false: the call is not sent. */
  readonly admit?: () => Promise<boolean>;
  /** Told when the upstream answered 429, with when its headers say to try again (ms). */
  readonly onThrottled?: (untilMs: number) => Promise<void>;
}

/**
 * A listing read whole (one instance's servers, one server's actions) longer than this is taken as an upstream fault
 * (a next link that loops) rather than followed on. Sweeps over the fleet read page by page, without a cap.
 */
const MAX_PAGES = 100;

/** Only the fields the driver relies on; anything else DigitalOcean sends is ignored. */
const dropletSchema = z.object({
  id: z.int(),
  name: z.string(),
  status: z.enum(['new', 'active', 'off', 'archive']),
  disk: z.int(),
  size_slug: z.string(),
  tags: z.array(z.string()),
  // Parsed as addresses: a server's address is probed from here and handed to customers' ssh, never a host name or text.
  networks: z.object({ v4: z.array(z.object({ ip_address: z.ipv4(), type: z.string() })).default([]) }),
});
const singleDropletSchema = z.object({ droplet: dropletSchema });
const dropletPageSchema = z.object({
  droplets: z.array(dropletSchema),
  links: z.object({ pages: z.object({ next: z.string().optional() }).optional() }).optional(),
});
const actionSchema = z.object({
  action: z.object({ id: z.int(), type: z.string(), status: z.enum(['in-progress', 'completed', 'errored']) }),
});
const actionPageSchema = z.object({
  actions: z.array(
    z.object({ id: z.int(), type: z.string(), status: z.enum(['in-progress', 'completed', 'errored']), started_at: z.string() }),
  ),
  links: z.object({ pages: z.object({ next: z.string().optional() }).optional() }).optional(),
});
const errorBodySchema = z.object({ message: z.string() });

/** One HTTP exchange: what was asked (for messages), the status and the body (undefined when empty or not JSON). */
interface Answer {
  readonly call: string;
  readonly status: number;
  readonly body: unknown;
}

/** The upstream driver for DigitalOcean API v2 droplets. */
export class DigitalOceanDriver implements UpstreamDriver {
  private readonly baseUrl: string;
  private token: string;
  /** Every token this driver has sent, so that none of them can leak through an error message. */
  private readonly tokensSent: string[] = [];
  private readonly rereadToken: ((stale: string) => Promise<string>) | undefined;
  private readonly timeoutMs: number;
  private readonly hasTimeFor: (ms: number) => boolean;
  private readonly region: string;
  private readonly perPage: number;
  private readonly fetchImpl: typeof fetch;
  private readonly admit: DigitalOceanDriverOptions['admit'];
  private readonly onThrottled: DigitalOceanDriverOptions['onThrottled'];

  constructor(options: DigitalOceanDriverOptions) {
    if (options.token === '') throw new Error('DigitalOcean token is empty');
    this.baseUrl = options.baseUrl;
    this.token = options.token;
    this.rereadToken = options.rereadToken;
    this.timeoutMs = options.timeoutMs;
    this.hasTimeFor = options.hasTimeFor ?? (() => true);
    this.region = options.region ?? 'nyc3';
    this.perPage = options.perPage ?? 200;
    if (!Number.isInteger(this.perPage) || this.perPage < 1 || this.perPage > 200) {
      throw new RangeError('perPage must be an integer from 1 to 200');
    }
    this.fetchImpl = options.fetchImpl ?? fetch;
    this.admit = options.admit;
    this.onThrottled = options.onThrottled;
  }

  async listServersByTag(tag: string): Promise<UpstreamServer[]> {
    const query = new URLSearchParams({ tag_name: tag, per_page: String(this.perPage) });
    const pages = await this.readPages(`/v2/droplets?${query}`, dropletPageSchema);
    return pages.flatMap((page) => page.droplets.map(toServer));
  }

  async *serverPagesByTag(tag: string): AsyncGenerator<UpstreamServer[]> {
    const query = new URLSearchParams({ tag_name: tag, per_page: String(this.perPage) });
    for await (const page of this.pagesOf(`/v2/droplets?${query}`, dropletPageSchema, Number.POSITIVE_INFINITY))
      yield page.droplets.map(toServer);
  }

  async serverPageByTag(tag: string, page: number): Promise<{ servers: UpstreamServer[]; more: boolean }> {
    const query = new URLSearchParams({ tag_name: tag, per_page: String(this.perPage), page: String(page) });
    const answer = this.read(await this.send('GET', `/v2/droplets?${query}`), dropletPageSchema);
    return { servers: answer.droplets.map(toServer), more: answer.links?.pages?.next !== undefined };
  }

  async listActions(serverId: number): Promise<UpstreamActionRecord[]> {
    const pages = await this.readPages(`/v2/droplets/${serverId}/actions?per_page=${this.perPage}`, actionPageSchema);
    return pages.flatMap((page) => page.actions.map(({ started_at, ...action }) => ({ ...action, startedAt: started_at })));
  }

  /** Every page of a listing, following next links (sent to baseUrl whatever host they name). */
  private async readPages<T extends { links?: { pages?: { next?: string } } }>(firstPath: string, schema: z.ZodType<T>): Promise<T[]> {
    const pages: T[] = [];
    for await (const page of this.pagesOf(firstPath, schema, MAX_PAGES)) pages.push(page);
    return pages;
  }

  /** The pages of a listing as they are read; more than `maxPages` is taken as an upstream fault. */
  private async *pagesOf<T extends { links?: { pages?: { next?: string } } }>(
    firstPath: string,
    schema: z.ZodType<T>,
    maxPages: number,
  ): AsyncGenerator<T> {
    let path: string | undefined = firstPath;
    for (let count = 0; path !== undefined; count++) {
      if (count === maxPages) throw this.transient(`DigitalOcean GET ${firstPath.split('?')[0]}: more than ${maxPages} pages`);
      const answer = await this.send('GET', path);
      const page = this.read(answer, schema);
      yield page;
      const next = page.links?.pages?.next;
      path = next === undefined ? undefined : this.localPath(next, answer);
    }
  }

  async createServer(request: CreateServerRequest): Promise<UpstreamServer> {
    const answer = await this.send('POST', '/v2/droplets', {
      name: request.name,
      region: this.region,
      size: request.size,
      image: request.image,
      user_data: request.userData,
      tags: [...request.tags],
      ipv6: false,
      monitoring: true,
    });
    return toServer(this.read(answer, singleDropletSchema).droplet);
  }

  async getServer(id: number): Promise<UpstreamServer | null> {
    const answer = await this.send('GET', `/v2/droplets/${id}`);
    if (answer.status === 404) return null;
    return toServer(this.read(answer, singleDropletSchema).droplet);
  }

  async deleteServer(id: number): Promise<void> {
    const answer = await this.send('DELETE', `/v2/droplets/${id}`);
    if (answer.status !== 404) this.ensureSuccess(answer);
  }

  async startAction(serverId: number, action: UpstreamActionRequest): Promise<UpstreamAction> {
    const answer = await this.send('POST', `/v2/droplets/${serverId}/actions`, action);
    return this.read(answer, actionSchema).action;
  }

  async getAction(actionId: number): Promise<UpstreamAction> {
    return this.read(await this.send('GET', `/v2/actions/${actionId}`), actionSchema).action;
  }

  /**
   * Performs one call, sent once more with a re-read token after a 401 (which the upstream answers before doing
   * anything, so even a create may be resent). Only network failures, timeouts and a deadline too near throw
   * here; HTTP statuses are judged by the caller.
   */
  private async send(method: string, path: string, body?: unknown): Promise<Answer> {
    const answer = await this.sendOnce(method, path, body);
    if (answer.status === 429) countMetric(metricNames.upstreamThrottled);
    if (answer.status !== 401) return answer;
    countMetric(metricNames.upstreamUnauthorized);
    if (!this.rereadToken) return answer;
    const fresh = await this.rereadToken(this.token);
    if (fresh === '' || fresh === this.token) return answer;
    this.token = fresh;
    const retried = await this.sendOnce(method, path, body);
    if (retried.status === 401) countMetric(metricNames.upstreamUnauthorized);
    return retried;
  }

  private async sendOnce(method: string, path: string, body?: unknown): Promise<Answer> {
    const call = `DigitalOcean ${method} ${path.split('?')[0]}`;
    // A call cut off by the function's own timeout has an unknown outcome; better not to start it at all.
    if (!this.hasTimeFor(this.timeoutMs)) {
      throw new UpstreamDeadlineError(`${call} not started: the invocation ends before its ${this.timeoutMs} ms could run out`);
    }
    if (this.admit && !(await this.admit()))
      throw new UpstreamBudgetSpentError(`${call} not sent: the upstream request budget is spent`, 429);
    if (!this.tokensSent.includes(this.token)) this.tokensSent.push(this.token);
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      const response = await this.fetchImpl(new URL(path, this.baseUrl), {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        // A redirect could carry the token elsewhere; it counts as a refusal instead.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      // Best effort: a hold that cannot be recorded only means the next calls find out for themselves.
      if (response.status === 429) await this.onThrottled?.(holdAfterThrottle(response.headers, Date.now())).catch(() => undefined);
      return { call, status: response.status, body: parseJson(await response.text()) };
    } catch (error) {
      throw this.transient(`${call} failed: ${this.describeFailure(error)}`);
    }
  }

  private read<T>(answer: Answer, schema: z.ZodType<T>): T {
    this.ensureSuccess(answer);
    const parsed = schema.safeParse(answer.body);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'body';
    throw this.transient(`${answer.call} answered ${answer.status} with an unexpected body (${where}: ${issue?.message})`);
  }

  private ensureSuccess(answer: Answer): void {
    if (answer.status >= 200 && answer.status < 300) return;
    const upstreamError = errorBodySchema.safeParse(answer.body);
    const detail = upstreamError.success ? `: ${upstreamError.data.message}` : '';
    const message = `${answer.call} answered ${answer.status}${detail}`;
    if (answer.status >= 500 || answer.status === 429) throw this.transient(message, answer.status);
    if (answer.status === 422 && upstreamError.success && NO_ROOM.test(upstreamError.data.message)) {
      throw new UpstreamCapacityError(this.redact(message), answer.status);
    }
    throw new UpstreamPermanentError(this.redact(message), answer.status);
  }

  /** The path and query of a next-page link, to be sent to baseUrl whatever host the link names. */
  private localPath(link: string, answer: Answer): string {
    const url = URL.parse(link, this.baseUrl);
    if (url === null) throw this.transient(`${answer.call} answered a malformed next-page link`);
    return url.pathname + url.search;
  }

  private describeFailure(error: unknown): string {
    if (error instanceof Error && error.name === 'TimeoutError') return `timed out after ${this.timeoutMs} ms`;
    const cause = error instanceof Error ? (error.cause as { code?: unknown } | null | undefined) : undefined;
    return typeof cause?.code === 'string' ? `network error ${cause.code}` : 'network error';
  }

  private transient(message: string, status?: number): UpstreamTransientError {
    return new UpstreamTransientError(this.redact(message), status);
  }

  /** Upstream error texts are echoed into messages; make sure none of them can carry the token onwards. */
  private redact(message: string): string {
    return this.tokensSent.reduce(
      (redacted, token) => redacted.replaceAll(token, '[redacted]'),
      message.replaceAll(this.token, '[redacted]'),
    );
  }
}

function parseJson(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function toServer(droplet: z.infer<typeof dropletSchema>): UpstreamServer {
  return {
    id: droplet.id,
    name: droplet.name,
    status: droplet.status,
    ipv4: droplet.networks.v4.find((network) => network.type === 'public')?.ip_address ?? null,
    sizeSlug: droplet.size_slug,
    diskGb: droplet.disk,
    tags: droplet.tags,
  };
}
