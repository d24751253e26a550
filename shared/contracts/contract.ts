import type * as z from 'zod';
import type { FunctionAccess } from '../access';
import type { RateLimitName } from '../model/rate-limits';

/**
 * A route's contract, declared once: the CDK stack builds its function and gateway route from it, the local gateway
 * dispatches by it, the handler's middleware stack is chosen by it, and the OpenAPI document describes it.
 */
type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';
export type RouteAuth = 'bearer' | 'session' | 'account' | 'none';

/** An OpenAPI header description (the document's `headers` entries). */
// A type, not an interface: the document's header objects carry an index signature that only a type satisfies.
export type HeaderDoc = {
  readonly description: string;
  readonly required: boolean;
  readonly schema: { type: 'string' | 'integer'; minimum?: number };
};
export type HeaderDocs = Readonly<Record<string, HeaderDoc>>;

/** One response of a route, by status: what it means, its headers and its body. */
export interface ResponseDoc {
  readonly description: string;
  readonly headers?: HeaderDocs;
  readonly schema?: z.ZodType;
}

export interface RouteDoc {
  readonly operationId: string;
  readonly summary: string;
  readonly description: string;
  readonly tags: readonly string[];
  /** Every answer the route can give, by status, errors with their texts included. */
  readonly responses: Readonly<Record<number, ResponseDoc>>;
}

interface RouteBase {
  /** Logical name; also the CDK construct id and the function name suffix. */
  readonly name: string;
  readonly method: HttpMethod | 'ANY';
  /** API Gateway path template, or `$default` for the catch-all route. */
  readonly path: string;
  /** Handler module, relative to the repository root, exporting `handler`. */
  readonly entry: string;
  readonly access: FunctionAccess;
  /**
   * The route's budget, sized from its worst case: its work's deadline, and when it answers if its work has not
   * ended. The function's timeout is longer (`functionTimeoutSeconds`). @default DEFAULT_ROUTE_TIMEOUT_SECONDS
   */
  readonly timeoutSeconds?: number;
  /** The gateway's own limit for this route, requests per second and burst, when the stage's does not fit it. */
  readonly throttle?: { readonly rateLimit: number; readonly burstLimit: number };
  /** The largest body accepted, in KiB, when the route takes more than most. @default MAX_BODY_BYTES / 1024 */
  readonly maxBodyKiB?: number;
  /** The JSON body, validated before the handler runs; a route without one never reads its body. */
  readonly body?: z.ZodType;
  /** The query string, validated before the handler runs. */
  readonly query?: z.ZodObject;
  /** The path parameters, as the document describes them (the domain reads them: a malformed id is a 404). */
  readonly params?: z.ZodObject;
  /** Absent only on the catch-all route, which the document does not list. */
  readonly doc?: RouteDoc;
}

/** An instance, job or webhook route: a Bearer API key, the account's rate limits, optionally idempotent. */
export interface BearerRoute extends RouteBase {
  readonly auth: 'bearer';
  /** The account's windows the route counts against. @default ['general'] */
  readonly limits?: readonly RateLimitName[];
  /** Honour the Idempotency-Key header: the same key and request within 24 h replays the first response. */
  readonly idempotent?: boolean;
  /**
   * Responses carry customers' credentials: a response kept for replay is kept without them, and the route's handler
   * says how (`RouteOptions.credentials`).
   */
  readonly credentials?: boolean;
  /**
   * Also the console's session, for its Instances page: a request with the session cookie and no Authorization header
   * authenticates as on a session route (its CSRF token on POST and DELETE, the session's rate limit, no
   * Idempotency-Key); any other as a Bearer request.
   */
  readonly console?: boolean;
}

/** A key-management or console route: the session cookie, and for changes its CSRF token. */
export interface SessionRoute extends RouteBase {
  readonly auth: 'session';
  readonly csrf: boolean;
  /** Counted against the session's rate limit. @default true */
  readonly rateLimited?: boolean;
}

/**
 * An account's own figures and money (billing): an API key as on a Bearer route (with the general rate limit), or,
 * without an Authorization header, the console's session as on a session route (with its CSRF token on changes).
 */
export interface AccountRoute extends RouteBase {
  readonly auth: 'account';
  /** With the session: the CSRF token is required. */
  readonly csrf: boolean;
}

/** A route anyone may call (sign-in, sign-up, the document, the catch-all). */
export interface PublicRoute extends RouteBase {
  readonly auth: 'none';
}

export type RouteContract = BearerRoute | SessionRoute | AccountRoute | PublicRoute;

export const DEFAULT_ROUTE = '$default';

/**
 * Routes that only touch DynamoDB (and Step Functions) finish in well under a second; 10 s leaves room for the
 * SDK's own throttling retries, a cold start and, on GetInstance, a cold token read plus the 0.8 s live read.
 */
export const DEFAULT_ROUTE_TIMEOUT_SECONDS = 10;

/**
 * Between a route's budget and its function's timeout: to answer when the work has not ended by its budget, and for
 * work that commits just before it to record its outcome, so that no invocation is cut off between a commit and the
 * answer that would record it.
 */
export const ANSWER_RESERVE_SECONDS = 1;

/** The Lambda timeout of a route's function: its budget and the answer's reserve. */
export const functionTimeoutSeconds = (route: Pick<RouteBase, 'timeoutSeconds'>): number =>
  (route.timeoutSeconds ?? DEFAULT_ROUTE_TIMEOUT_SECONDS) + ANSWER_RESERVE_SECONDS;

/** The body accepted per request, before parsing. */
export const MAX_BODY_BYTES = 16 * 1024;
export const bodyTooLarge = (kib: number) => `Request body too large (limit ${kib} KiB)`;
export const BODY_TOO_LARGE = bodyTooLarge(MAX_BODY_BYTES / 1024);
export const UNSUPPORTED_MEDIA_TYPE = 'Content-Type must be application/json';

/** Whether a route takes an API key or the console's session (an account route, or a console-enabled Bearer route). */
export const takesKeyOrSession = (contract: RouteContract): boolean =>
  contract.auth === 'account' || (contract.auth === 'bearer' && contract.console === true);
