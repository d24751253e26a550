import type { Deps } from '../../domain/deps';
import { logger } from '../../observability';
import { rateLimitExceeded } from '../../model/errors';
import type { RateLimitName, WindowState } from '../../model/rate-limits';
import { statusOf } from '../failure-status';
import { countRequest, giveBack } from '../rate-limit-windows';
import { IDEMPOTENCY_HEADER } from '../idempotency';
import { NothingWrittenError } from '../../transient-errors';
import type { Middleware, RequestState } from './state';

/**
 * Answers that deployed nothing: a create refused with one of them gives its deploy unit back, so that typos,
 * missing funds or busy capacity never use up the deploy quota. A 500 is not among them: its outcome is unknown,
 * unless its create was never sent.
 */
const REFUSALS = new Set([400, 401, 402, 403, 404, 409, 413, 422, 429, 503]);

async function giveBackDeployOnRefusal(deps: Deps, state: RequestState, status: number): Promise<void> {
  if (REFUSALS.has(status)) await giveBackDeploy(deps, state);
}

/** Gives the request's deploy unit back: it deployed nothing. */
export async function giveBackDeploy(deps: Deps, state: RequestState): Promise<void> {
  const accountId = state.apiKey?.account_id;
  if (accountId === undefined) return;
  state.windows = await Promise.all(state.windows.map((window) => (window.name === 'deploy' ? giveBack(deps, accountId, window) : window)));
}

const exceeded = (windows: readonly WindowState[]) => windows.filter((window) => window.exceeded);

/**
 * Counts a Bearer request against the account's windows, in the same round trip as the owner's read. Authentication
 * answers first (401, 403), then the limits (429); every answer carries the windows. With an Idempotency-Key on an
 * idempotent route the deploy quota is left to the idempotency middleware, which counts it only for a request that is
 * not a replay.
 */
export const rateLimit = (deps: Deps, limits: readonly RateLimitName[], idempotent: boolean): Middleware => ({
  before: async ({ event, context }) => {
    const state = context.request;
    const { apiKey, bearer } = state;
    if (!apiKey || !bearer) throw new Error('the rate limit needs the Bearer key: authentication did not run');
    const deferDeploy = idempotent && event.headers[IDEMPOTENCY_HEADER] !== undefined;
    const counted = limits.filter((name) => !(deferDeploy && name === 'deploy'));
    const [windows] = await Promise.all([
      countRequest(deps, apiKey.account_id, counted, deps.clock.now().getTime()),
      bearer.catch(() => undefined),
    ]);
    state.windows = [...state.windows, ...windows];
    await bearer;
    const over = exceeded(windows);
    if (over.length > 0) throw rateLimitExceeded(Math.max(...over.map((window) => window.resetSeconds)));
  },
  after: async ({ context, response }) => {
    if (response) await giveBackDeployOnRefusal(deps, context.request, response.statusCode);
  },
  onError: async ({ context, error }) => {
    // The request's own error stays the answer even when the store cannot take the unit back now.
    const refused =
      error instanceof NothingWrittenError
        ? giveBackDeploy(deps, context.request)
        : giveBackDeployOnRefusal(deps, context.request, statusOf(error));
    await refused.catch((givingBack: unknown) => logger.warn('could not give back a deploy unit after a refusal', { error: givingBack }));
  },
});
