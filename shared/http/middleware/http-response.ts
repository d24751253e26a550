import { Failure } from '../../model/errors';
import { SERVICE_UNAVAILABLE_MESSAGE } from '../../schemas/errors';
import { isTransientFailure } from '../../transient-errors';
import { rateLimitHeaders } from '../../model/rate-limits';
import { metricNames } from '../../metric-names';
import { countMetric, logger, publishMetrics } from '../../observability';
import { statusOf } from '../failure-status';
import { json, type ApiResponse } from '../responses';
import type { Event, Middleware, StatefulContext } from './state';

/** Seconds a client waits before retrying past a dependency's brief outage. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * Maps any error to the response: domain failures with their status and text; a dependency that failed in a way
 * worth retrying (DynamoDB or Step Functions unreachable, throttled or answering 5xx) 503 with `Retry-After`, never a
 * failure, since what it was asked may have taken effect; anything else a bare 500. Pure: it may run more than once
 * for one request (an idempotent route stores the answer), so it counts and logs nothing.
 */
export function errorResponse(error: unknown, requestId: string): ApiResponse {
  if (error instanceof Failure) {
    return json(statusOf(error), { error: error.message, ...error.details, request_id: requestId }, { ...error.headers });
  }
  if (isTransientFailure(error)) {
    return json(
      503,
      { error: 'Service unavailable', message: SERVICE_UNAVAILABLE_MESSAGE, request_id: requestId },
      { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
    );
  }
  return json(500, { error: 'Internal server error', request_id: requestId });
}

/** A body as logged: parsed when JSON (its secret fields are redacted by name), else its text (redacted as text: an event stream). */
function loggedBody(body: string | undefined): unknown {
  try {
    return JSON.parse(body ?? 'null');
  } catch {
    return body;
  }
}

/** What a failed request counts and logs, once per request. */
function recordError(error: unknown): void {
  if (!(error instanceof Failure)) {
    if (isTransientFailure(error)) logger.warn('a dependency is unavailable; answered 503', { error });
    else logger.error('unhandled error', { error });
    return;
  }
  if (error.kind === 'rate_limited') countMetric(metricNames.rateLimited);
  if (error.kind === 'upstream_error') countMetric(metricNames.upstreamErrors);
  if (statusOf(error) >= 500) logger.error('request failed', { error });
}

/**
 * Shapes every response: the error mapping on failure, and on every response the request id and the rate-limit
 * headers; then publishes the invocation's metrics. Registered first, so that its onError runs after every other
 * middleware's.
 */
export const httpResponse = (): Middleware => {
  const finish = (request: { event: Event; context: StatefulContext; response: ApiResponse | null | undefined }) => {
    const requestId = request.event.requestContext.requestId;
    const response = request.response ?? json(500, { error: 'Internal server error', request_id: requestId });
    if (logger.getLevelName() === 'DEBUG') logger.debug('response', { status: response.statusCode, body: loggedBody(response.body) });
    // An answer's own limit headers (a source address over its failed authentications) win over the account's.
    response.headers = { ...rateLimitHeaders(request.context.request.windows), ...response.headers, 'X-Request-Id': requestId };
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
