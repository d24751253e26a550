/**
 * Failures that reach clients, typed by kind: what went wrong in the domain's words, with the spec's text. The HTTP
 * layer maps each kind to its status in one table (shared/http/failure-status.ts); anything else thrown is an
 * internal error and answers 500 without details.
 */
export type FailureKind =
  | 'invalid_request'
  | 'unauthenticated'
  | 'payment_required'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'too_large'
  | 'unsupported_media_type'
  | 'unprocessable'
  | 'rate_limited'
  | 'upstream_error'
  | 'unavailable'
  | 'outcome_unknown';

export class Failure extends Error {
  override readonly name = 'Failure';
  constructor(
    readonly kind: FailureKind,
    message: string,
    /** Extra body fields (for example the current status on a conflict). */
    readonly details: Readonly<Record<string, unknown>> = {},
    /** Extra response headers, from the HTTP layer's own failures (rate-limit policies). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new Failure('invalid_request', message);
export const unauthorized = (message: string) => new Failure('unauthenticated', message);
export const paymentRequired = (message: string) => new Failure('payment_required', message);
export const forbidden = (message: string) => new Failure('forbidden', message);
export const notFound = (message: string) => new Failure('not_found', message);
export const serviceUnavailable = (message: string) => new Failure('unavailable', message);

export const instanceNotFound = () => notFound('Instance not found');
export const revokedApiKey = () => unauthorized('Invalid or revoked API key');

/**
 * The spec's 409 text, with the current status and a readable explanation beside it; while another action runs,
 * the explanation and `running_action` name it (a reboot leaves the status `active`, which alone would mislead).
 */
export const lifecycleConflict = (status: string, action: string, runningAction?: string) =>
  new Failure('conflict', 'lifecycle conflict', {
    status,
    ...(runningAction
      ? { running_action: runningAction, message: `Cannot ${action} while ${runningAction.replace('_', ' ')} is in progress` }
      : { message: `Cannot ${action} while the instance is ${status}` }),
  });

export const rateLimitExceeded = (retryAfterSeconds: number) =>
  new Failure('rate_limited', 'Rate limit exceeded', { retry_after: retryAfterSeconds }, { 'Retry-After': String(retryAfterSeconds) });

/**
 * A request whose budget ran out while its work may still complete: not a failure, since it may yet succeed. Its
 * Idempotency-Key stays claimed until the outcome is known, and a retry with it then gets that outcome.
 */
export const outcomeUnknown = (retryAfterSeconds: number) =>
  new Failure(
    'outcome_unknown',
    'Outcome unknown',
    { message: 'The request ran out of time but may still complete: retry it with the same Idempotency-Key to get its result' },
    { 'Retry-After': String(retryAfterSeconds) },
  );

/** A base for workflow errors: the class name is what Step Functions Retry and Catch match on. */
export function namedError(name: string) {
  return class extends Error {
    override readonly name = name;
  };
}
