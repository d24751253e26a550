import type { Deps } from '../../domain/deps';
import type { ApiKey } from '../../store/api-keys';
import { authenticateOwner, findActiveKey } from '../bearer-auth';
import { limitingFailures } from './failed-authentication';
import type { Event, Middleware, StatefulContext } from './state';

/** Work a route starts beside the key's lookup, given the key once it is found (see RouteOptions.early). */
export type EarlyStart = (event: Event, context: StatefulContext, key: Promise<ApiKey>) => Promise<unknown>;

/**
 * Bearer authentication: the key, then its owner's standing. The owner's read is started, not awaited: the rate-limit
 * middleware counts the request alongside it, and the handler (or the rate limit, for the spec's order of answers)
 * waits for it. A route's early work starts with the key's lookup, in its round.
 */
export const bearerAuth = (deps: Deps, startEarly?: EarlyStart): Middleware => ({
  before: async ({ event, context }) => {
    const state = context.request;
    const found = limitingFailures(deps, event, findActiveKey(deps, event.headers.authorization));
    if (startEarly) {
      state.early = startEarly(event, context, found);
      // Answered only once authentication passed, by the handler that awaits it.
      state.early.catch(() => undefined);
    }
    const apiKey = await found;
    state.apiKey = apiKey;
    state.bearer = limitingFailures(deps, event, authenticateOwner(deps, apiKey));
    // Its failure is answered by whoever awaits it; until then it must not count as unhandled.
    state.bearer.catch(() => undefined);
  },
});
