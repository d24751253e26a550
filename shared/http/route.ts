import type { Deps, FoundKey } from '../domain/deps';
import { entryHandler, type EntryHandler } from '../wiring/entry';
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { traceHandler } from '../tracing';
import type * as z from 'zod';
import { ANSWER_RESERVE_SECONDS, MAX_BODY_BYTES, takesKeyOrSession, type RouteContract } from '../contracts/contract';
import { withDeadline } from '../deadline';
import { outcomeUnknown } from '../model/errors';
import { DependencyTransientError } from '../transient-errors';
import { logger, tracer } from '../observability';
import { guarded } from '../request-guard';
import { parseOrBadRequest } from '../schemas/validation';
import { assertRequestStillAuthorized } from '../store/request-guard';
import type { BearerPrincipal } from './bearer-auth';
import { sourceAddressOf } from './flood-guard';
import { bearerAuth, type EarlyStart } from './middleware/bearer-auth';
import { edgeOrigin } from './middleware/edge-origin';
import { httpResponse } from './middleware/http-response';
import type { ReplayCredentials, ResumeClaim } from './idempotency';
import { idempotency } from './middleware/idempotency';
import { jsonBody } from './middleware/json-body';
import { rateLimit } from './middleware/rate-limit';
import { refuseCrossSite, sessionAuth } from './middleware/session-auth';
import type { Event, Middleware, StatefulContext } from './middleware/state';
import type { ApiResponse } from './responses';
import { sessionTokenOf, type SessionPrincipal } from './session-auth';

export interface RouteInput<TPrincipal, TBody, TQuery, TEarly = undefined> {
  readonly principal: TPrincipal;
  readonly body: TBody;
  readonly query: TQuery;
  readonly pathParameters: Record<string, string | undefined>;
  /** The caller's address as API Gateway saw it (brute-force limits). */
  readonly sourceAddress: string;
  readonly event: Event;
  /** The request's claimed Idempotency-Key, scoped to the account; what it commits carries it. */
  readonly idempotencyKey?: string;
  /** The route's early work, when it has any and the request came with a Bearer key (a session's does not start it). */
  readonly early: Promise<TEarly> | undefined;
}

export interface RouteOptions<TEarly = undefined> {
  /** On an idempotent route: what a request that died holding its claim committed, answered instead of doing it again. */
  readonly resume?: ResumeClaim;
  /** On an idempotent route whose answers carry credentials: how a kept answer leaves them out and a replay restores them. */
  readonly credentials?: ReplayCredentials;
  /**
   * On a Bearer route: the route's own first reads, started beside the key's lookup instead of after authentication,
   * so that they share its round; given the key once found, for ownership and for what is done as the request's. The
   * handler gets its result only once authentication passed. Data read in the key's own round needs no second look
   * at the key after it, so a GET with early work skips the re-check below.
   */
  readonly early?: (deps: Deps, event: Event, key: Promise<FoundKey>) => Promise<TEarly>;
}

type RawQuery = Record<string, string | undefined>;
type BodyOf<C> = C extends { readonly body: infer S extends z.ZodType } ? z.output<S> : undefined;
type QueryOf<C> = C extends { readonly query: infer S extends z.ZodType } ? z.output<S> : RawQuery;
export type RouteHandler = middy.MiddyfiedHandler<Event, ApiResponse, Error, StatefulContext>;

/** The middlewares of a route's authentication, from its contract. */
function authentication(deps: Deps, contract: RouteContract, { resume, credentials, early }: RouteOptions<unknown>): Middleware[] {
  switch (contract.auth) {
    case 'bearer': {
      const limits = contract.limits ?? ['general'];
      const idempotent = contract.idempotent ?? false;
      if (idempotent && contract.credentials && !credentials) {
        throw new Error(`${contract.name}: its answers carry credentials; say how an answer kept for replay leaves them out`);
      }
      const bearer = [
        bearerAuth(deps, early && startEarly(deps, early)),
        rateLimit(deps, limits, idempotent),
        ...(idempotent ? [idempotency(deps, limits, credentials, resume)] : []),
      ];
      if (!contract.console) return bearer;
      return [
        ...bearer.map((middleware) => onlyWhen(hasBearer, middleware)),
        onlyWhen((event) => !hasBearer(event), sessionAuth(deps, contract.method !== 'GET', true)),
      ];
    }
    case 'session':
      return [sessionAuth(deps, contract.csrf, contract.rateLimited ?? true)];
    case 'account':
      return [
        ...[bearerAuth(deps), rateLimit(deps, ['general'], false)].map((middleware) => onlyWhen(hasBearer, middleware)),
        onlyWhen((event) => !hasBearer(event), sessionAuth(deps, contract.csrf, true)),
      ];
    case 'none':
      return contract.method === 'POST' ? [refuseCrossSite(deps)] : [];
  }
}

/** Starts a route's early work with the invocation's deadline; once the key is found, its work is guarded by it. */
function startEarly(deps: Deps, early: NonNullable<RouteOptions<unknown>['early']>): EarlyStart {
  return (event, context, found) => {
    const invocation = withDeadline(deps, context, { reserveMs: ANSWER_RESERVE_MS });
    const key = found.then((apiKey) => ({
      apiKey,
      deps: guarded(invocation, { keyHash: apiKey.key_hash, accountId: apiKey.account_id }),
    }));
    // A refused key is answered by authentication: early work that does not wait for it leaves nothing unhandled.
    key.catch(() => undefined);
    return early(invocation, event, key);
  };
}

/**
 * On an account route, a request with the session cookie and no Authorization header authenticates by the session;
 * any other by its API key (so one with neither hears what an API client needs: the Authorization header is missing).
 */
const hasBearer = (event: Event) => event.headers.authorization !== undefined || sessionTokenOf(event) === undefined;

/** The middleware, for the requests `applies` picks; the others pass it by. */
function onlyWhen(applies: (event: Event) => boolean, middleware: Middleware): Middleware {
  return {
    before: (request) => (applies(request.event) ? middleware.before?.(request) : undefined),
    after: (request) => (applies(request.event) ? middleware.after?.(request) : undefined),
    onError: (request) => (applies(request.event) ? middleware.onError?.(request) : undefined),
  };
}

type PrincipalOf<C> = C extends { readonly auth: 'bearer'; readonly console: true }
  ? BearerPrincipal | SessionPrincipal
  : C extends { readonly auth: 'bearer' }
    ? BearerPrincipal
    : C extends { readonly auth: 'session' }
      ? SessionPrincipal
      : C extends { readonly auth: 'account' }
        ? BearerPrincipal | SessionPrincipal
        : undefined;

/**
 * What the middlewares established, typed by the contract that chose them. Each is an overload whose signature the
 * contract's type refines: the pipeline is built from the same contract, so the value is of that type.
 */
async function principalOf<C extends RouteContract>(contract: C, context: StatefulContext): Promise<PrincipalOf<C>>;
async function principalOf(contract: RouteContract, context: StatefulContext): Promise<BearerPrincipal | SessionPrincipal | undefined> {
  const { bearer, session } = context.request;
  if (contract.auth === 'none') return undefined;
  const principal = (contract.auth === 'bearer' && !takesKeyOrSession(contract)) || bearer ? await bearer : session;
  if (!principal) throw new Error('authentication did not run');
  return principal;
}

function bodyOf<C extends RouteContract>(contract: C, event: Event): BodyOf<C>;
function bodyOf(contract: RouteContract, event: Event): unknown {
  // The body middleware left the parsed JSON in place of the raw text.
  return contract.body ? parseOrBadRequest(contract.body, event.body) : undefined;
}

function queryOf<C extends RouteContract>(contract: C, event: Event): QueryOf<C>;
function queryOf(contract: RouteContract, event: Event): unknown {
  const raw = event.queryStringParameters ?? {};
  return contract.query ? parseOrBadRequest(contract.query, raw) : raw;
}

const ANSWER_RESERVE_MS = ANSWER_RESERVE_SECONDS * 1000;
/** By then the invocation is over: the key holds the outcome, or its claim waits to lapse. */
const OUTCOME_UNKNOWN_RETRY_AFTER_SECONDS = ANSWER_RESERVE_SECONDS + 1;

/**
 * The one pipeline every route runs, built from its contract: response shaping and error mapping (first, so that its
 * onError runs last), tracing, logging context, the edge check, the route's authentication (with rate limits and
 * idempotency on Bearer routes), then the JSON body. The handler gets the principal, and the body and query as the
 * contract's schemas parse them; it only calls the domain. Its work runs to the route's budget, which ends the
 * answer's reserve before the function's timeout; an idempotent route whose work has not ended by then answers 504
 * Outcome unknown, and its work runs on; any other 503 Service unavailable.
 */
export function route<C extends RouteContract, E = undefined>(
  contract: C,
  handler: (deps: Deps, input: RouteInput<PrincipalOf<C>, BodyOf<C>, QueryOf<C>, NoInfer<E>>) => Promise<ApiResponse>,
  options: RouteOptions<E> = {},
): EntryHandler<RouteHandler> {
  const idempotent = contract.auth === 'bearer' && contract.idempotent === true;
  return entryHandler((deps: Deps): RouteHandler => {
    const pipeline = middy<Event, ApiResponse, Error, StatefulContext>({
      timeoutEarlyInMillis: ANSWER_RESERVE_MS,
      timeoutEarlyResponse: () => {
        if (idempotent) throw outcomeUnknown(OUTCOME_UNKNOWN_RETRY_AFTER_SECONDS);
        // Out of time (a dependency stalled): 503 with Retry-After, never a failure for work that may have been done.
        throw new DependencyTransientError('the route ran out of time');
      },
    })
      .use(httpResponse())
      // Responses carry root passwords and private keys: never record them as trace metadata.
      .use(traceHandler(tracer))
      .use(injectLambdaContext(logger, { resetKeys: true }))
      .use(edgeOrigin(deps))
      .use(authentication(deps, contract, options as RouteOptions<unknown>));
    if (contract.body)
      pipeline.use(
        jsonBody(
          takesKeyOrSession(contract) ? hasBearer : contract.auth === 'bearer' ? () => true : () => false,
          (contract.maxBodyKiB ?? MAX_BODY_BYTES / 1024) * 1024,
        ),
      );
    return pipeline.handler(async (event, context, { signal }) => {
      const principal = await principalOf(contract, context);
      const { replay, idempotencyKey, early } = context.request;
      if (replay) return replay;
      // Answered already: the work does not start.
      signal.throwIfAborted();
      if (principal) logger.appendKeys({ account_id: principal.account.account_id });
      const input = {
        principal,
        body: bodyOf(contract, event),
        query: queryOf(contract, event),
        pathParameters: event.pathParameters ?? {},
        sourceAddress: sourceAddressOf(deps, event),
        event,
        idempotencyKey,
        // Started by this route's own options: of the type they declare.
        early: early as Promise<E> | undefined,
      };
      const invocation = withDeadline(deps, context, { reserveMs: ANSWER_RESERVE_MS, signal });
      // A Bearer request's writes are conditioned on its key and account still holding; a read checks them again in
      // the same round as its own read, so that a key revoked meanwhile gets no answer either (a read made early, in
      // the key's own round, is already no older than the key's lookup).
      const bearer = principal !== undefined && 'apiKey' in principal;
      const request = bearer
        ? guarded(invocation, { keyHash: principal.apiKey.key_hash, accountId: principal.account.account_id })
        : invocation;
      const work =
        bearer && event.requestContext.http.method === 'GET' && !early
          ? Promise.all([handler(request, input), assertRequestStillAuthorized(request)]).then(([response]) => response)
          : handler(request, input);
      context.request.work = work;
      return work;
    });
  });
}
