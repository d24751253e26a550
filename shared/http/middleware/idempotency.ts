import type { RateLimitName } from '../../domain/rate-limits';
import { idempotencyKeyOf, resolveIdempotencyKey, settleIdempotencyKey } from '../idempotency';
import { errorResponse } from './http-response';
import type { Middleware } from './state';

/**
 * An idempotent route's Idempotency-Key, resolved right after the rate limit: a replay answers the first response
 * and counts against no deferred limit (the deploy quota); a new request claims the key and counts them now. The
 * answer is kept for replay (sealed when it carries credentials) once known.
 */
export const idempotency = (limits: readonly RateLimitName[], credentials: boolean): Middleware => ({
  before: async ({ event, context }) => {
    const state = context.request;
    const key = idempotencyKeyOf(event);
    if (key === undefined) return;
    if (!state.apiKey) throw new Error('idempotency needs the Bearer key: authentication did not run');
    const deferred = limits.filter((name) => name === 'deploy');
    const outcome = await resolveIdempotencyKey(event, state.apiKey.account_id, key, deferred, (windows) => {
      state.windows = [...state.windows, ...windows];
    });
    if (outcome.kind === 'replay') state.replay = outcome.response;
    else state.idempotencyKey = outcome.key;
  },
  after: async ({ context, response }) => {
    const key = context.request.idempotencyKey;
    if (response && key) await settleIdempotencyKey(key, response, credentials);
  },
  onError: async ({ event, context, error }) => {
    const key = context.request.idempotencyKey;
    if (key) await settleIdempotencyKey(key, errorResponse(error, event.requestContext.requestId), false);
  },
});
