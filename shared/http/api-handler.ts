import middy, { type MiddlewareObj } from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { traceHandler } from '../tracing';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type * as z from 'zod';
import { runWithDeadline } from '../deadline';
import { Failure } from '../domain/errors';
import { statusOf } from './failure-status';
import { rateLimitHeaders, type RateLimitName, type WindowState } from '../domain/rate-limits';
import { parseOrBadRequest } from '../schemas/validation';
import { metricNames } from '../metric-names';
import { countMetric, logger, publishMetrics, tracer } from '../observability';
import { authenticateBearer, giveBack, type BearerPrincipal } from './bearer-auth';
import { assertCameThroughEdge } from './edge-origin';
import { limitFailedAuthentication, sourceAddressOf } from './flood-guard';
import { authenticateSession, csrfFailed, isCrossSite, type SessionPrincipal } from './session-auth';
import { idempotencyKeyOf, resolveIdempotencyKey, settleIdempotencyKey } from './idempotency';
import { json, type ApiResponse } from './responses';
import { runGuarded } from '../request-guard';
import { assertRequestStillAuthorized } from '../store/request-guard';

const MAX_BODY_BYTES = 16 * 1024;

type Event = APIGatewayProxyEventV2;

/** What the middlewares learn about a request, kept on the Lambda context for the ones after them. */
interface RequestState {
  principal?: BearerPrincipal | SessionPrincipal;
  windows: WindowState[];
  body?: unknown;
  /** The claimed Idempotency-Key, settled when the response is known. */
  idempotencyKey?: string;
  /** The first request's response, when this one replays it. */
  replay?: ApiResponse;
}
type StatefulContext = Context & { request: RequestState };

/**
 * Maps any error to the response: domain errors with their status and text, anything else a bare 500. Pure: it may
 * run more than once for one request (an idempotent route stores the answer), so it counts and logs nothing.
 */
export function errorResponse(error: unknown, requestId: string): ApiResponse {
  if (error instanceof Failure) {
    return json(statusOf(error), { error: error.message, ...error.details, request_id: requestId }, { ...error.headers });
  }
  return json(500, { error: 'Internal server error', request_id: requestId });
}

/** What a failed request counts and logs, once per request. */
function recordError(error: unknown): void {
  if (!(error instanceof Failure)) {
    logger.error('unhandled error', { error });
    return;
  }
  if (error.kind === 'rate_limited') countMetric(metricNames.rateLimited);
  if (error.kind === 'upstream_error') countMetric(metricNames.upstreamErrors);
  if (statusOf(error) >= 500) logger.error('request failed', { error });
}

/**
 * Shapes every response: the error mapping on failure, and on every response the request id and the rate-limit
 * headers; then publishes the invocation's metrics. Registered first, so that its onError runs after every other middleware's.
 */
const httpResponse = (): MiddlewareObj<Event, ApiResponse, Error, StatefulContext> => {
  const finish = (request: { event: Event; context: StatefulContext; response: ApiResponse | null | undefined }) => {
    const requestId = request.event.requestContext.requestId;
    const response = request.response ?? json(500, { error: 'Internal server error', request_id: requestId });
    if (logger.getLevelName() === 'DEBUG')
      logger.debug('response', { status: response.statusCode, body: JSON.parse(response.body ?? 'null') });
    response.headers = { ...response.headers, ...rateLimitHeaders(request.context.request.windows), 'X-Request-Id': requestId };
    request.response = response;
    // Last of all, so that metrics counted while mapping an error are published with this invocation.
    publishMetrics();
  };
  return {
    before: (request) => {
      request.context.request = { windows: [] };
    },
    after: finish,
    onError: (request) => {
      recordError(request.error);
      request.response = errorResponse(request.error, request.event.requestContext.requestId);
      finish(request);
    },
  };
};

/**
 * Answers that deployed nothing: a create refused with one of them gives its deploy unit back, so that typos,
 * missing funds or busy capacity never use up the deploy quota. A 500 is not among them: its outcome is unknown.
 */
const REFUSALS = new Set([400, 401, 402, 403, 404, 409, 413, 422, 429, 503]);

async function giveBackDeployOnRefusal(state: RequestState, status: number): Promise<void> {
  const principal = state.principal;
  if (!REFUSALS.has(status) || !principal) return;
  state.windows = await Promise.all(
    state.windows.map((window) => (window.name === 'deploy' ? giveBack(principal.account.account_id, window) : window)),
  );
}

/**
 * Bearer auth with the route's rate limits. With an Idempotency-Key on an idempotent route, the key is resolved
 * right after auth, and only a request that is not a replay counts against the deploy quota.
 */
const bearerAuth = (
  limits: readonly RateLimitName[],
  idempotent: boolean,
  credentials: boolean,
): MiddlewareObj<Event, ApiResponse, Error, StatefulContext> => ({
  before: async ({ event, context }) => {
    const state = context.request;
    const addWindows = (windows: WindowState[]) => {
      state.windows = [...state.windows, ...windows];
    };
    const key = idempotent ? event.headers['idempotency-key'] : undefined;
    const deferred: RateLimitName[] = key === undefined ? [] : limits.filter((name) => name === 'deploy');
    const principal = await authenticateOrLimit(event, state, () =>
      authenticateBearer(
        event.headers.authorization,
        limits.filter((name) => !deferred.includes(name)),
        addWindows,
      ),
    );
    state.principal = principal;
    if (key === undefined) return;
    const outcome = await resolveIdempotencyKey(event, principal.account.account_id, idempotencyKeyOf(event) ?? key, deferred, addWindows);
    if (outcome.kind === 'replay') state.replay = outcome.response;
    else state.idempotencyKey = outcome.key;
  },
  after: async ({ context, response }) => {
    if (!response) return;
    await giveBackDeployOnRefusal(context.request, response.statusCode);
    if (context.request.idempotencyKey) await settleIdempotencyKey(context.request.idempotencyKey, response, credentials);
  },
  onError: async ({ event, context, error }) => {
    await giveBackDeployOnRefusal(context.request, statusOf(error));
    const key = context.request.idempotencyKey;
    if (key) await settleIdempotencyKey(key, errorResponse(error, event.requestContext.requestId), false);
  },
});

/**
 * Runs a request's authentication; a failure (401) is counted against its source address, and past that address's
 * limit answers 429 instead (with the limit's own headers, not an account's).
 */
async function authenticateOrLimit<T>(event: Event, state: RequestState, authenticate: () => Promise<T>): Promise<T> {
  try {
    return await authenticate();
  } catch (error) {
    if (!(error instanceof Failure) || error.kind !== 'unauthenticated') throw error;
    const answer = await limitFailedAuthentication(event, error);
    if (answer !== error) state.windows = [];
    throw answer;
  }
}

/** Refuses, before anything else runs, a request that did not come through the edge (when one is configured). */
const edgeOrigin = (): MiddlewareObj<Event, ApiResponse, Error, StatefulContext> => ({
  before: ({ event }) => {
    assertCameThroughEdge(event);
  },
});

/** Reads the body as JSON within the size limit and validates it with the route's schema. */
const jsonBody = (schema: z.ZodType): MiddlewareObj<Event, ApiResponse, Error, StatefulContext> => ({
  before: ({ event, context }) => {
    const raw = event.body === undefined ? '' : event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString() : event.body;
    if (Buffer.byteLength(raw) > MAX_BODY_BYTES) throw new Failure('too_large', 'Request body too large (limit 16 KiB)');
    let parsed: unknown;
    if (raw.trim() !== '') {
      try {
        parsed = JSON.parse(raw);
      } catch {
        throw new Failure('invalid_request', 'Invalid JSON body');
      }
    }
    context.request.body = parseOrBadRequest(schema, parsed);
  },
});

type BodyOf<TSchema> = TSchema extends z.ZodType ? z.output<TSchema> : undefined;

export interface RouteInput<TPrincipal, TBody> {
  readonly principal: TPrincipal;
  readonly body: TBody;
  readonly pathParameters: Record<string, string | undefined>;
  readonly queryParameters: Record<string, string | undefined>;
  /** The caller's address as API Gateway saw it (brute-force limits). */
  readonly sourceAddress: string;
}

type Principal = BearerPrincipal | SessionPrincipal | undefined;

/**
 * The one composition every route uses: response shaping and error mapping (first, so its onError runs last),
 * logging context, the route's authentication, then body parsing; the handler itself only calls the domain.
 */
function composeRoute<TPrincipal extends Principal, TSchema extends z.ZodType | undefined>(
  /** Undefined for a route anyone may call. */
  authentication: MiddlewareObj<Event, ApiResponse, Error, StatefulContext> | undefined,
  bodySchema: TSchema | undefined,
  handler: (input: RouteInput<TPrincipal, BodyOf<TSchema>>) => Promise<ApiResponse>,
) {
  const composed = middy<Event, ApiResponse, Error, StatefulContext>()
    .use(httpResponse())
    // Responses carry root passwords and private keys: never record them as trace metadata.
    .use(traceHandler(tracer))
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(edgeOrigin())
    .use(authentication ?? refuseCrossSite);
  if (bodySchema) composed.use(jsonBody(bodySchema));
  return composed.handler(async (event, context) => {
    const { principal, body, replay } = context.request;
    if (replay) return replay;
    if (authentication && !principal) throw new Error('authentication did not run');
    if (principal) logger.appendKeys({ account_id: principal.account.account_id });
    const input = {
      principal: principal as TPrincipal,
      body: body as BodyOf<TSchema>,
      pathParameters: event.pathParameters ?? {},
      queryParameters: event.queryStringParameters ?? {},
      sourceAddress: sourceAddressOf(event),
    };
    const run = () => runWithDeadline(context, () => handler(input));
    if (!principal || !('apiKey' in principal)) return run();
    // A Bearer request's writes are conditioned on its key and account still holding; a read checks them again
    // in the same round as its own read, so that a key revoked meanwhile gets no answer either.
    return runGuarded({ keyHash: principal.apiKey.key_hash, accountId: principal.account.account_id }, async () => {
      if (event.requestContext.http.method !== 'GET') return run();
      const [response] = await Promise.all([run(), assertRequestStillAuthorized()]);
      return response;
    });
  });
}

interface BearerRouteOptions<TSchema extends z.ZodType | undefined> {
  readonly limits?: readonly RateLimitName[];
  readonly body?: TSchema;
  /** Honour the Idempotency-Key header: the same key and request within 24 h replays the first response. */
  readonly idempotent?: boolean;
  /** Responses carry customers' credentials: a response kept for replay is stored sealed. */
  readonly credentials?: boolean;
}

/** An instance route: Bearer key, rate limits, optional idempotency. */
export function bearerRoute<TSchema extends z.ZodType | undefined = undefined>(
  options: BearerRouteOptions<TSchema>,
  handler: (input: RouteInput<BearerPrincipal, BodyOf<TSchema>>) => Promise<ApiResponse>,
) {
  return composeRoute(
    bearerAuth(options.limits ?? ['general'], options.idempotent ?? false, options.credentials ?? false),
    options.body,
    handler,
  );
}

interface SessionRouteOptions<TSchema extends z.ZodType | undefined> {
  /** POST and DELETE: require the session's CSRF token from a same-site page. */
  readonly csrf: boolean;
  readonly body?: TSchema;
}

/**
 * Routes anyone may call (sign-in, sign-up) still refuse another site's page: otherwise it could sign a visitor
 * in to an account of its choosing.
 */
const refuseCrossSite: MiddlewareObj<Event, ApiResponse, Error, StatefulContext> = {
  before: ({ event }) => {
    if (isCrossSite(event)) throw csrfFailed();
  },
};

/** A console sign-in route: no credentials; the caller's source address feeds the brute-force limits. */
export function publicRoute<TSchema extends z.ZodType | undefined = undefined>(
  options: { readonly body?: TSchema },
  handler: (input: RouteInput<undefined, BodyOf<TSchema>>) => Promise<ApiResponse>,
) {
  return composeRoute(undefined, options.body, handler);
}

const sessionAuth = (csrf: boolean): MiddlewareObj<Event, ApiResponse, Error, StatefulContext> => ({
  before: async ({ event, context }) => {
    context.request.principal = await authenticateOrLimit(event, context.request, () => authenticateSession(event, csrf));
  },
});

/** A key-management route: session cookie, and the CSRF token for changes. */
export function sessionRoute<TSchema extends z.ZodType | undefined = undefined>(
  options: SessionRouteOptions<TSchema>,
  handler: (input: RouteInput<SessionPrincipal, BodyOf<TSchema>>) => Promise<ApiResponse>,
) {
  return composeRoute(sessionAuth(options.csrf), options.body, handler);
}
