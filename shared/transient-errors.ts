import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { isServerError, isThrottlingError, isTransientError } from '@smithy/core/retry';
import { UpstreamTransientError } from './upstream/driver';

/**
 * A call to DynamoDB, Step Functions or another AWS service that failed in a way worth trying again later (lost
 * connection, timeout, throttling, 5xx, a transaction cancelled by a collision): the name the state machines' Retry
 * matches, whatever the SDK called it.
 */
export class DependencyTransientError extends Error {
  override readonly name = 'DependencyTransientError';
}

/**
 * A write that failed before any attempt of it was sent: nothing was written, so what its request took for it (a
 * create's deploy unit) goes back.
 */
export class NothingWrittenError extends Error {
  override readonly name = 'NothingWrittenError';
}

/** The SDK leaves `$metadata` on the error of every request it sent; one without it never left the process. */
export const neverSent = (error: unknown): boolean => !(typeof error === 'object' && error !== null && '$metadata' in error);

/** DynamoDB errors that only say another request got in the way; the SDK leaves them to the caller. */
const CONTENTION_NAMES = new Set(['TransactionConflictException']);

/** A transaction's cancellation reasons that say "not now" rather than "no". */
const CONTENTION_REASONS = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded']);

/** Node and undici codes of a connection that failed or was cut, beyond those the SDK's classification knows. */
const CONNECTION_CODES = new Set([
  'ECONNABORTED',
  'ESOCKETTIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
]);

/** Built-in classes that only wrap what went wrong, in `cause`. */
const WRAPPER_NAMES = new Set(['Error', 'TypeError']);

interface SdkShape {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  readonly $retryable?: { throttling?: boolean };
  readonly $metadata?: { httpStatusCode?: number };
}

/** The error's own fields, its cause left out: a typed error is judged by what it says, not by what it wraps. */
function ownShape(error: Error): SdkShape {
  const fields = error as Error & Partial<SdkShape>;
  return { name: error.name, message: error.message, code: fields.code, $retryable: fields.$retryable, $metadata: fields.$metadata };
}

const cancelledOnlyByContention = (error: TransactionCanceledException) => {
  const codes = (error.CancellationReasons ?? []).map((reason) => reason.Code ?? 'None').filter((code) => code !== 'None');
  return codes.length > 0 && codes.every((code) => CONTENTION_REASONS.has(code));
};

/**
 * Whether a failure is transient: the upstream's own transient errors, and AWS calls that failed by connection
 * (refused, reset, broken pipe, DNS), timeout, throttling or a 5xx, as the AWS SDK classifies them. An abort is
 * transient only when a timeout caused it. Refusals (4xx, a failed condition) and typed domain errors are not.
 */
export function isTransientFailure(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 10) return false;
  if (error instanceof DependencyTransientError || error instanceof UpstreamTransientError) return true;
  // An aggregate goes by its first failure, whose name it reports under (see meterFailure).
  if (error instanceof AggregateError) return isTransientFailure(error.errors[0], depth + 1);
  if (error instanceof TransactionCanceledException) return cancelledOnlyByContention(error);
  if (error.name === 'AbortError') return error.cause instanceof Error && error.cause.name === 'TimeoutError';
  const shape = ownShape(error);
  if (
    isTransientError(shape) ||
    isThrottlingError(shape) ||
    isServerError(shape) ||
    CONTENTION_NAMES.has(shape.name) ||
    CONNECTION_CODES.has(shape.code ?? '') ||
    shape.message === 'socket hang up'
  ) {
    return true;
  }
  return WRAPPER_NAMES.has(error.name) && isTransientFailure(error.cause, depth + 1);
}

/**
 * The error a workflow step ends with: a transient failure of an AWS dependency under the one name the state
 * machines retry, with its message; the upstream's typed errors and every other error as they are.
 */
export function asStepError(error: unknown): unknown {
  if (error instanceof UpstreamTransientError || error instanceof DependencyTransientError) return error;
  if (!isTransientFailure(error)) return error;
  return new DependencyTransientError((error as Error).message, { cause: error });
}
