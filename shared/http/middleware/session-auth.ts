import type { Deps } from '../../domain/deps';
import { rateLimitExceeded } from '../../model/errors';
import { countRequest } from '../rate-limit-windows';
import type { Session } from '../../store/sessions';
import { authenticateSession, csrfFailed, isCrossSite } from '../session-auth';
import { limitingFailures } from './failed-authentication';
import type { Middleware } from './state';

/**
 * A key-management or console route: the session cookie, and for changes the session's CSRF token. When the route
 * is `limited`, the session's own rate limit is counted in the same round trip as the account's read; authentication
 * answers first (401, 403), then the limit (429).
 */
export const sessionAuth = (deps: Deps, csrf: boolean, limited: boolean): Middleware => ({
  before: async ({ event, context }) => {
    const state = context.request;
    const count = (session: Session) =>
      limited ? countRequest(deps, session.session_hash, ['session'], deps.clock.now().getTime()) : Promise.resolve([]);
    const [principal, windows] = await limitingFailures(deps, event, authenticateSession(deps, event, csrf, count));
    state.session = principal;
    state.windows = [...state.windows, ...windows];
    const over = windows.filter((window) => window.exceeded);
    if (over.length > 0) throw rateLimitExceeded(Math.max(...over.map((window) => window.resetSeconds)));
  },
});

/**
 * A public route that changes something (sign-in, sign-up) still refuses another site's page: otherwise it could sign
 * a visitor in to an account of its choosing.
 */
export const refuseCrossSite = (deps: Deps): Middleware => ({
  before: ({ event }) => {
    if (isCrossSite(deps, event)) throw csrfFailed();
  },
});
