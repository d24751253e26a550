import type { Deps } from '../../domain/deps';
import { authenticateOwner, findActiveKey } from '../bearer-auth';
import { limitingFailures } from './failed-authentication';
import type { Middleware } from './state';

/**
 * Bearer authentication: the key, then its owner's standing. The owner's read is started, not awaited: the rate-limit
 * middleware counts the request alongside it, and the handler (or the rate limit, for the spec's order of answers)
 * waits for it.
 */
export const bearerAuth = (deps: Deps): Middleware => ({
  before: async ({ event, context }) => {
    const state = context.request;
    const apiKey = await limitingFailures(deps, event, findActiveKey(deps, event.headers.authorization));
    state.apiKey = apiKey;
    state.bearer = limitingFailures(deps, event, authenticateOwner(deps, apiKey));
    // Its failure is answered by whoever awaits it; until then it must not count as unhandled.
    state.bearer.catch(() => undefined);
  },
});
