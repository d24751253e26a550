/**
 * Errors that reach clients. Each carries its HTTP status and the spec's text; the HTTP layer maps them in one
 * place. Anything else thrown is an internal error and answers 500 without details.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra body fields (for example the current status on a 409). */
    readonly details: Readonly<Record<string, unknown>> = {},
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const unauthorized = (message: string) => new ApiError(401, message);
export const paymentRequired = (message: string) => new ApiError(402, message);
export const forbidden = (message: string) => new ApiError(403, message);
export const notFound = (message: string) => new ApiError(404, message);
export const serviceUnavailable = (message: string) => new ApiError(503, message);

export const instanceNotFound = () => notFound('Instance not found');

/**
 * The spec's 409 text, with the current status and a readable explanation beside it; while another action runs,
 * the explanation and `running_action` name it (a reboot leaves the status `active`, which alone would mislead).
 */
export const lifecycleConflict = (status: string, action: string, runningAction?: string) =>
  new ApiError(409, 'lifecycle conflict', {
    status,
    ...(runningAction
      ? { running_action: runningAction, message: `Cannot ${action} while ${runningAction.replace('_', ' ')} is in progress` }
      : { message: `Cannot ${action} while the instance is ${status}` }),
  });

export const rateLimitExceeded = (retryAfterSeconds: number) =>
  new ApiError(429, 'Rate limit exceeded', { retry_after: retryAfterSeconds }, { 'Retry-After': String(retryAfterSeconds) });

/** A base for workflow errors: the class name is what Step Functions Retry and Catch match on. */
export function namedError(name: string) {
  return class extends Error {
    override readonly name = name;
  };
}
