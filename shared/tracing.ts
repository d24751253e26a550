import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { subscribe } from 'node:diagnostics_channel';
import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';

/**
 * X-Ray tracing without the X-Ray SDK: Lambda's active tracing already records each invocation's segment, so what
 * a function adds is subsegments under it, sent to the X-Ray daemon as the SDK would (one UDP datagram each):
 *
 * - `## index.handler` around each API request, annotated with `ColdStart` and `Service`;
 * - one per AWS SDK call on a client passed to `captureAWSv3Client` (namespace `aws`: service, operation, table,
 *   request id, status), whose request carries the trace header so the callee joins the trace;
 * - one per `fetch` (namespace `remote`: method, URL without its query, status), with the trace header too.
 *
 * Nothing from a request's or a response's body is ever recorded, and error messages pass through `redact`. Active
 * only in Lambda (AWS_EXECUTION_ENV), unless POWERTOOLS_TRACE_ENABLED is `false`, and only for sampled requests.
 * Loading this costs next to nothing (Node built-ins only), where the X-Ray SDK cost a third of a cold start.
 */

interface TraceHeader {
  readonly root: string;
  readonly parent: string | undefined;
  readonly sampled: boolean;
}

/** Root=…;Parent=…;Sampled=1, as Lambda sets it for each invocation. */
export function parseTraceHeader(header: string | undefined): TraceHeader | undefined {
  if (!header) return undefined;
  const fields = new Map(
    header.split(';').map((part) => {
      const at = part.indexOf('=');
      return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
    }),
  );
  const root = fields.get('Root');
  if (!root) return undefined;
  return { root, parent: fields.get('Parent'), sampled: fields.get('Sampled') === '1' };
}

/** The UDP address of the daemon: `host:port`, or `tcp:host:port udp:host:port` (the UDP one is used). */
export function daemonAddress(value: string | undefined): { host: string; port: number } {
  const udp = value?.split(/\s+/).find((part) => part.startsWith('udp:')) ?? value?.split(/\s+/).find((part) => !part.includes('tcp:'));
  const match = /^(?:udp:)?(.+):(\d+)$/.exec(udp ?? '');
  return match ? { host: match[1]!, port: Number(match[2]) } : { host: '127.0.0.1', port: 2000 };
}

const newId = () => randomBytes(8).toString('hex');
const now = () => Date.now() / 1000;

interface SubsegmentFields {
  namespace?: 'aws' | 'remote';
  http?: { request?: { method: string; url: string }; response?: { status?: number; content_length?: number } };
  aws?: Record<string, unknown>;
  annotations?: Record<string, string | number | boolean>;
  error?: boolean;
  throttle?: boolean;
  fault?: boolean;
  cause?: { exceptions: { id: string; type: string; message: string; remote?: boolean }[] };
}

/** One subsegment in progress; sent, complete, when it ends. */
export class Subsegment {
  readonly id = newId();
  private readonly startTime = now();
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    readonly name: string,
    readonly traceId: string,
    private readonly parentId: string | undefined,
    private readonly fields: SubsegmentFields = {},
  ) {}

  /** The trace header for a call made inside this subsegment. */
  get header(): string {
    return `Root=${this.traceId};Parent=${this.id};Sampled=1`;
  }

  set(fields: SubsegmentFields): void {
    Object.assign(this.fields, fields);
  }

  /** Flags the subsegment by an HTTP status, as the X-Ray SDK does: 429 throttle, 4xx error, 5xx fault. */
  setStatus(status: number | undefined, contentLength?: number): void {
    if (status === undefined) return;
    this.fields.http = {
      ...this.fields.http,
      response: { status, ...(contentLength === undefined || Number.isNaN(contentLength) ? {} : { content_length: contentLength }) },
    };
    if (status === 429) this.fields.throttle = true;
    if (status >= 400 && status < 500) this.fields.error = true;
    if (status >= 500) this.fields.fault = true;
  }

  fail(error: unknown, remote = false): void {
    const type = error instanceof Error ? error.name : typeof error;
    const message = error instanceof Error ? error.message : String(error);
    if (!this.fields.error && !this.fields.throttle) this.fields.fault = true;
    this.fields.cause = {
      exceptions: [{ id: newId(), type, message: this.tracer.redact(message), ...(remote ? { remote: true } : {}) }],
    };
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.tracer.send({
      type: 'subsegment',
      id: this.id,
      trace_id: this.traceId,
      ...(this.parentId ? { parent_id: this.parentId } : {}),
      name: this.name,
      start_time: this.startTime,
      end_time: now(),
      ...this.fields,
    });
  }
}

/** What an AWS SDK v3 client's middleware stack offers (structurally, so that any client fits). */
interface InstrumentableClient {
  readonly middlewareStack: {
    add(middleware: (next: Handler, context: { clientName?: string; commandName?: string }) => Handler, options: object): void;
    remove(name: string): boolean;
  };
}
type Handler = (args: { input?: object; request?: unknown }) => Promise<{ output?: { $metadata?: Metadata }; response?: unknown }>;
interface Metadata {
  readonly httpStatusCode?: number;
  readonly requestId?: string;
  readonly attempts?: number;
}

const MIDDLEWARE_NAME = 'VpsXRayTracing';

export interface TracerOptions {
  readonly serviceName: string;
  /** Applied to every error message a subsegment records. */
  readonly redact?: (text: string) => string;
}

export class Tracer {
  readonly serviceName: string;
  readonly redact: (text: string) => string;
  /**
   * The subsegment of the request being handled, the parent of the calls it makes. Lambda runs one invocation
   * at a time per process, so one slot is exact there; where several handlers share a process (the local
   * runtime) a call may be filed under another request's subsegment of the same trace.
   */
  private current: Subsegment | undefined;
  private coldStart = true;
  private socket: Socket | undefined;
  /** Where the daemon listens: set by Lambda for the process's life, so read once. */
  private daemon: { host: string; port: number } | undefined;
  private fetchInstrumented = false;

  constructor(options: TracerOptions) {
    this.serviceName = options.serviceName;
    this.redact = options.redact ?? ((text) => text);
    if (this.active()) this.instrumentFetch();
  }

  /** In Lambda and not switched off; read from the environment each time. */
  private active(): boolean {
    const { POWERTOOLS_TRACE_ENABLED: enabled, AWS_EXECUTION_ENV: executionEnv, AWS_SAM_LOCAL: samLocal } = process.env;
    return enabled?.toLowerCase() !== 'false' && executionEnv?.startsWith('AWS_Lambda_') === true && !samLocal;
  }

  /** The invocation's trace header when it is traced: tracing active and the request sampled. */
  private invocation(): TraceHeader | undefined {
    if (!this.active()) return undefined;
    const header = parseTraceHeader(process.env._X_AMZN_TRACE_ID);
    return header?.sampled ? header : undefined;
  }

  isTracingEnabled(): boolean {
    return this.invocation() !== undefined;
  }

  /** A subsegment under the current request's (or, outside one, under the invocation's segment); undefined when not traced. */
  startSubsegment(name: string, fields?: SubsegmentFields): Subsegment | undefined {
    const header = this.invocation();
    if (!header) return undefined;
    const parent = this.current?.traceId === header.root ? this.current.id : header.parent;
    return new Subsegment(this, name, header.root, parent, fields);
  }

  /** Opens the handler's subsegment and makes it the parent of the calls that follow. */
  startHandler(): Subsegment | undefined {
    const coldStart = this.coldStart;
    this.coldStart = false;
    const header = this.invocation();
    if (!header) return undefined;
    this.instrumentFetch();
    const segment = new Subsegment(this, `## ${process.env._HANDLER ?? 'handler'}`, header.root, header.parent, {
      annotations: { ColdStart: coldStart, Service: this.serviceName },
    });
    this.current = segment;
    return segment;
  }

  endHandler(segment: Subsegment, error?: unknown): void {
    if (error !== undefined) segment.fail(error);
    segment.end();
    if (this.current === segment) this.current = undefined;
  }

  /** Records each call the client makes as an `aws` subsegment and passes the trace on in its request. */
  captureAWSv3Client<T extends object>(client: T): T {
    const { middlewareStack } = client as unknown as InstrumentableClient;
    middlewareStack.remove(MIDDLEWARE_NAME);
    middlewareStack.add(
      (next, context) => async (args) => {
        const service = (context.clientName ?? 'AWS').replace(/Client$/, '');
        const subsegment = this.startSubsegment(service, { namespace: 'aws' });
        if (!subsegment) return next(args);
        const request = args.request as { headers?: Record<string, string> } | undefined;
        if (request?.headers) request.headers['X-Amzn-Trace-Id'] = subsegment.header;
        const input = (args.input ?? {}) as { TableName?: unknown; RequestItems?: object; TransactItems?: unknown[] };
        const operation = (context.commandName ?? '').replace(/Command$/, '');
        const aws = {
          operation,
          region: process.env.AWS_REGION,
          ...(typeof input.TableName === 'string' ? { table_name: input.TableName } : {}),
          ...(input.RequestItems ? { table_names: Object.keys(input.RequestItems) } : {}),
        };
        const record = (metadata: Metadata | undefined) => {
          subsegment.set({ aws: { ...aws, request_id: metadata?.requestId, retries: Math.max(0, (metadata?.attempts ?? 1) - 1) } });
          subsegment.setStatus(metadata?.httpStatusCode);
        };
        try {
          const result = await next(args);
          record(result.output?.$metadata);
          return result;
        } catch (error) {
          record((error as { $metadata?: Metadata }).$metadata);
          subsegment.fail(error, true);
          throw error;
        } finally {
          subsegment.end();
        }
      },
      { step: 'build', name: MIDDLEWARE_NAME },
    );
    return client;
  }

  /** Records `fetch` calls (undici's diagnostics channels) as `remote` subsegments, with the trace header. */
  private instrumentFetch(): void {
    if (this.fetchInstrumented) return;
    this.fetchInstrumented = true;
    const open = new WeakMap<object, Subsegment>();
    const take = (request: object) => {
      const subsegment = open.get(request);
      open.delete(request);
      return subsegment;
    };
    subscribe('undici:request:create', (message) => {
      const { request } = message as { request: UndiciRequest };
      if (request.method === 'CONNECT') return;
      let url: URL;
      try {
        url = new URL(request.path, request.origin);
      } catch {
        return;
      }
      const subsegment = this.startSubsegment(url.hostname, {
        namespace: 'remote',
        http: { request: { method: request.method, url: `${url.protocol}//${url.host}${url.pathname}` } },
      });
      if (!subsegment) return;
      request.addHeader('X-Amzn-Trace-Id', subsegment.header);
      open.set(request, subsegment);
    });
    subscribe('undici:request:headers', (message) => {
      const { request, response } = message as { request: UndiciRequest; response: { statusCode: number; headers: Buffer[] } };
      const subsegment = take(request);
      if (!subsegment) return;
      subsegment.setStatus(response.statusCode, Number(headerValue(response.headers, 'content-length')));
      subsegment.end();
    });
    subscribe('undici:request:error', (message) => {
      const { request, error } = message as { request: UndiciRequest; error: unknown };
      const subsegment = take(request);
      if (!subsegment) return;
      subsegment.set({ error: true });
      subsegment.fail(error, true);
      subsegment.end();
    });
  }

  /** Sends one finished (sub)segment to the daemon; tracing never fails a request. */
  send(document: object): void {
    try {
      this.daemon ??= daemonAddress(process.env.AWS_XRAY_DAEMON_ADDRESS);
      const { host, port } = this.daemon;
      if (!this.socket) {
        this.socket = createSocket('udp4');
        this.socket.on('error', () => undefined);
        this.socket.unref();
      }
      this.socket.send(`{"format":"json","version":1}\n${JSON.stringify(document)}`, port, host);
    } catch {
      // Nothing to do: a lost subsegment must not cost the request.
    }
  }
}

interface UndiciRequest {
  readonly origin: string;
  readonly path: string;
  readonly method: string;
  addHeader(name: string, value: string): void;
}

function headerValue(headers: Buffer[], name: string): string | undefined {
  for (let i = 0; i + 1 < headers.length; i += 2) {
    if (headers[i]!.toString().toLowerCase() === name) return headers[i + 1]!.toString();
  }
  return undefined;
}

/**
 * The middy middleware that traces an API request: a `## index.handler` subsegment from the first middleware after
 * it to the response, under which the request's AWS and HTTP calls are filed. Responses are never recorded.
 */
export function traceHandler<TEvent, TResult, TErr, TContext extends Context>(
  tracer: Tracer,
): MiddlewareObj<TEvent, TResult, TErr, TContext> {
  const open = new WeakMap<object, Subsegment>();
  const close = (request: object, error?: unknown) => {
    const segment = open.get(request);
    open.delete(request);
    if (segment) tracer.endHandler(segment, error);
  };
  return {
    before: (request) => {
      const segment = tracer.startHandler();
      if (segment) open.set(request, segment);
    },
    after: (request) => close(request),
    onError: (request) => close(request, request.error ?? new Error('unknown error')),
  };
}
