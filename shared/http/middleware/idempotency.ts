import type { Deps } from '../../domain/deps';
import type { RateLimitName } from '../../model/rate-limits';
import { Failure } from '../../model/errors';
import { logger } from '../../observability';
import {
  idempotencyKeyOf,
  resolveIdempotencyKey,
  settleIdempotencyKey,
  settleIdempotencyKeyOnError,
  type ReplayCredentials,
  type ResumeClaim,
} from '../idempotency';
import type { ApiResponse } from '../responses';
import { releaseIdempotencyKey } from '../../store/idempotency';
import { DependencyTransientError, NothingWrittenError } from '../../transient-errors';
import { giveBackDeploy } from './rate-limit';
import type { Middleware, RequestState } from './state';

/**
 * Work stopped by its spent budget before it could commit, or whose write was never sent, did nothing: the key and
 * the deploy unit go back.
 */
const stoppedBeforeCommit = (error: unknown) =>
  error instanceof NothingWrittenError || (error instanceof Error && error.name === 'AbortError');

async function nothingDone(deps: Deps, key: string, state: RequestState): Promise<void> {
  await releaseIdempotencyKey(deps, key);
  await giveBackDeploy(deps, state);
}

/** Settles the key once work that outlived its request's answer has ended; the invocation runs until then. */
function settleWhenDone(
  deps: Deps,
  key: string,
  work: Promise<ApiResponse>,
  credentials: ReplayCredentials | undefined,
  requestId: string,
  state: RequestState,
): void {
  work
    .then(
      (response) => settleIdempotencyKey(deps, key, response, credentials),
      (error: unknown) =>
        stoppedBeforeCommit(error) ? nothingDone(deps, key, state) : settleIdempotencyKeyOnError(deps, key, error, requestId),
    )
    // Left claimed, the key lapses and a retry resumes it.
    .catch((error: unknown) => logger.error('could not settle an Idempotency-Key after its request was answered', { error }));
}

/**
 * An idempotent route's Idempotency-Key, resolved right after the rate limit: a replay answers the first response
 * and counts against no deferred limit (the deploy quota); a new request claims the key and counts them now; a claim
 * abandoned by a request that died is resumed. The answer is kept for replay (without the credentials it carries)
 * once known: when the route's budget ran out first, once its work has ended.
 */
export const idempotency = (
  deps: Deps,
  limits: readonly RateLimitName[],
  credentials?: ReplayCredentials,
  resume?: ResumeClaim,
): Middleware => ({
  before: async ({ event, context }) => {
    const state = context.request;
    const key = idempotencyKeyOf(event);
    if (key === undefined) return;
    if (!state.apiKey) throw new Error('idempotency needs the Bearer key: authentication did not run');
    const outcome = await resolveIdempotencyKey(deps, event, state.apiKey.account_id, key, {
      deferredLimits: limits.filter((name) => name === 'deploy'),
      onWindows: (windows) => {
        state.windows = [...state.windows, ...windows];
      },
      resume,
      credentials,
    });
    if (outcome.kind === 'replay') state.replay = outcome.response;
    else state.idempotencyKey = outcome.key;
  },
  after: async ({ context, response }) => {
    const key = context.request.idempotencyKey;
    if (response && key) await settleIdempotencyKey(deps, key, response, credentials);
  },
  onError: async (request) => {
    const { event, context, error } = request;
    const { idempotencyKey: key, work } = context.request;
    const outOfTime = error instanceof Failure && error.kind === 'outcome_unknown';
    if (!key) {
      // No key to retry with: out of time is a dependency too slow, with a 503 that says the outcome is not known.
      if (outOfTime) request.error = new DependencyTransientError('the route ran out of time');
      return;
    }
    const { requestId } = event.requestContext;
    try {
      if (outOfTime) {
        // Never given up while the work may still commit. Work that had not started never will (the route checks
        // its budget first): nothing was done.
        if (work) settleWhenDone(deps, key, work, credentials, requestId, context.request);
        else await nothingDone(deps, key, context.request);
        return;
      }
      if (stoppedBeforeCommit(error)) return await nothingDone(deps, key, context.request);
      await settleIdempotencyKeyOnError(deps, key, error, requestId);
    } catch (settling) {
      // The store is down too (the likely cause of the error): the request's own error is still the answer, and the
      // claim, left as it is, lapses after its lock so that a retry resumes it.
      logger.warn('could not settle an Idempotency-Key after its request failed; its claim will lapse', { error: settling });
    }
  },
});
