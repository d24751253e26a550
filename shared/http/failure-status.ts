import { Failure, type FailureKind } from '../model/errors';

/** The one table from the domain's failures to HTTP statuses. */
const failureStatus: Readonly<Record<FailureKind, number>> = {
  invalid_request: 400,
  unauthenticated: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  rate_limited: 429,
  upstream_error: 502,
  unavailable: 503,
  outcome_unknown: 504,
};

/** The status a thrown error answers with: its kind's, or 500 for anything that is not a failure of the domain. */
export const statusOf = (error: unknown): number => (error instanceof Failure ? failureStatus[error.kind] : 500);
