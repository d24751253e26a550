import * as z from '../model/zod';
import { DEFAULT_FAILED_AUTH_LIMIT, FAILED_AUTH_POLICY, FAILED_AUTH_WINDOW_SECONDS, policyOf, rateLimits } from '../model/rate-limits';
import { errorBodySchema, rateLimitErrorSchema } from '../schemas/errors';
import { BODY_TOO_LARGE, type HeaderDoc, type HeaderDocs, type ResponseDoc } from './contract';

/** The parts of route contracts' documentation that many routes share: headers and error answers. */

const ErrorBody = errorBodySchema.meta({ id: 'Error' });
const RateLimitError = rateLimitErrorSchema.meta({ id: 'RateLimitError' });

export const header = (description: string, required: boolean, schema: HeaderDoc['schema'] = { type: 'string' }): HeaderDoc => ({
  description,
  required,
  schema,
});

export const requestIdHeader: HeaderDocs = { 'X-Request-Id': header('Identifies the request in our logs.', true) };

const policy = (name: keyof typeof rateLimits) => `\`${policyOf(name, rateLimits[name].limit, rateLimits[name].windowSeconds)}\``;
const failedAuthPolicy = `\`${policyOf(FAILED_AUTH_POLICY, DEFAULT_FAILED_AUTH_LIMIT, FAILED_AUTH_WINDOW_SECONDS)}\``;

/** On every answer to an authenticated Bearer request; absent when the key itself was refused. */
export const rateLimitHeaders = (required: boolean): HeaderDocs => ({
  ...requestIdHeader,
  RateLimit: header('What remains of each limit window: `"general";r=<remaining>;t=<seconds to reset>`.', required),
  'RateLimit-Policy': header(
    `The limits that apply: ${policy('general')}, plus ${policy('deploy')} on create; on a 429 for too many failed authentications from one address, ${failedAuthPolicy}.`,
    required,
  ),
});

/** GET one instance: its status is the stored one where the live power state was due. */
export const storedStateHeader: HeaderDocs = {
  Warning: header(
    '`110 - "Response is Stale"` when the status is the stored one where the live power state was due: the upstream could not be read now (the service’s budget for live reads is spent, the upstream asked to wait, or it did not answer in time). Absent on a live answer, and while an action or lifecycle is under way (the stored state is then the answer).',
    false,
  ),
};

export const replayedHeader: HeaderDocs = {
  'Idempotent-Replayed': header('`true` when this is the replay of an earlier response.', false),
};

const retryAfter = { 'Retry-After': header('Seconds to wait before retrying.', true, { type: 'integer', minimum: 1 }) };

/** 429: an account over one of its limits, or a source address over its failed authentications. */
const rateLimited = (description: string, headers: HeaderDocs = requestIdHeader): ResponseDoc => ({
  description,
  headers: { ...headers, ...retryAfter },
  schema: RateLimitError,
});

export const error = (description: string, headers: HeaderDocs = requestIdHeader): ResponseDoc => ({
  description,
  headers,
  schema: ErrorBody,
});

export const ok = (description: string, schema: z.ZodType, headers: HeaderDocs = requestIdHeader): ResponseDoc => ({
  description,
  headers,
  schema,
});

const internalError = error('Internal server error (no details).');

/** 504 on an idempotent route whose budget ran out while its work may still complete. */
export const outcomeUnknown = error(
  '`Outcome unknown`: the request ran out of time but may still complete. Retry after `Retry-After` with the same Idempotency-Key: 409 while it is still in progress, then its result.',
  { ...rateLimitHeaders(false), ...retryAfter },
);
export const tooLarge = `${BODY_TOO_LARGE}.`;

/** The texts of a Bearer route's errors, by status; each route lists the statuses it can give. */
const bearerErrorTexts: Record<number, string> = {
  400: 'Invalid request (the text says which field and why).',
  401: 'Missing or malformed Authorization header; Invalid API key prefix; Invalid or revoked API key; API key owner not found.',
  402: 'Insufficient balance.',
  403: 'Account suspended; Account not confirmed.',
  404: 'Instance not found (missing, or owned by someone else).',
  409: 'lifecycle conflict (with the current `status`), or an Idempotency-Key whose first request is still in progress.',
  413: tooLarge,
  422: 'The Idempotency-Key was already used with a different request.',
  502: 'Upstream error.',
  503: 'Capacity exhausted (IPv4 pool or tier).',
};

/** 503 any route can give while a dependency (DynamoDB, Step Functions) is briefly unavailable. */
const serviceUnavailableText =
  '`Service unavailable` (with a `message`): a dependency is briefly unavailable and the request may or may not have taken effect; retry after `Retry-After`, a create or an action with the same Idempotency-Key.';
const serviceUnavailable = (headers: HeaderDocs = requestIdHeader) => error(serviceUnavailableText, { ...headers, ...retryAfter });

/**
 * The error answers of a Bearer route: the statuses it lists (with a route's own texts where given), plus the 429, 503
 * and 500 every one of them can give.
 */
export function bearerErrors(statuses: readonly number[], texts: Readonly<Record<number, string>> = {}): Record<number, ResponseDoc> {
  const listed = [...statuses, ...Object.keys(texts).map(Number)];
  return Object.fromEntries([
    ...listed.map((status) => [status, error(texts[status] ?? bearerErrorTexts[status] ?? 'Error.', rateLimitHeaders(false))]),
    // A route's own 503 (capacity) names the dependency outage too; any other gets it alone.
    [
      503,
      listed.includes(503)
        ? error(`${texts[503] ?? bearerErrorTexts[503]} Or ${serviceUnavailableText}`, rateLimitHeaders(false))
        : serviceUnavailable(rateLimitHeaders(false)),
    ],
    [
      429,
      rateLimited(
        'Rate limit exceeded: the account is over one of its limits, or the source address failed authentication too often.',
        rateLimitHeaders(true),
      ),
    ],
    [500, internalError],
  ]);
}

/** 429 on a cookie route: the source address failed authentication too often. */
export const failedAuthenticationLimited = rateLimited('Rate limit exceeded: the source address failed authentication too often.', {
  ...requestIdHeader,
  RateLimit: header(`\`"${FAILED_AUTH_POLICY}";r=0;t=<seconds to reset>\`.`, true),
  'RateLimit-Policy': header(`${failedAuthPolicy}.`, true),
});

/** 429 on a cookie route counted against the session's limit: the session is over it, or the source address failed. */
const sessionLimited = rateLimited(
  `Rate limit exceeded: the session is over its limit (${rateLimits.session.limit} requests in any ${rateLimits.session.windowSeconds} seconds), or the source address failed authentication too often.`,
  {
    ...requestIdHeader,
    RateLimit: header('`"session";r=0;t=<seconds to reset>`, or the same for `"failed-auth"`.', true),
    'RateLimit-Policy': header(`${policy('session')}, or ${failedAuthPolicy}.`, true),
  },
);

/** The error answers every session route can give. */
export const sessionErrors: Record<number, ResponseDoc> = {
  401: error('No valid session (a Bearer key is never accepted here).'),
  403: error('CSRF validation failed; Account suspended; Account not confirmed.'),
  429: sessionLimited,
  500: internalError,
  503: serviceUnavailable(),
};

/** An account route's errors: those of either way in, with the route's own texts. */
export const accountErrors = (statuses: readonly number[], texts: Readonly<Record<number, string>> = {}): Record<number, ResponseDoc> => ({
  ...sessionErrors,
  ...bearerErrors(statuses, texts),
  401: error('Missing or malformed Authorization header; Invalid API key prefix; Invalid or revoked API key; No valid session.'),
  403: error('CSRF validation failed (with the session); Account suspended; Account not confirmed.'),
});

/** Sign-out's: a session route that no session limit refuses. */
export const signOutErrors: Record<number, ResponseDoc> = { ...sessionErrors, 429: failedAuthenticationLimited };

/** The error answers of a public console route with a body: its brute-force limits included. */
export const publicFormErrors: Record<number, ResponseDoc> = {
  400: error('Invalid request (the text says which field and why).'),
  403: error('CSRF validation failed (a cross-site page).'),
  413: error(tooLarge),
  429: rateLimited('Too many attempts from this address or for this e-mail address (sliding 15-minute windows).'),
  500: internalError,
  503: serviceUnavailable(),
};
