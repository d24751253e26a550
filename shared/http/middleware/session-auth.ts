import { authenticateSession, csrfFailed, isCrossSite } from '../session-auth';
import { limitingFailures } from './failed-authentication';
import type { Middleware } from './state';

/** A key-management or console route: the session cookie, and for changes the session's CSRF token. */
export const sessionAuth = (csrf: boolean): Middleware => ({
  before: async ({ event, context }) => {
    context.request.session = await limitingFailures(event, authenticateSession(event, csrf));
  },
});

/**
 * A public route that changes something (sign-in, sign-up) still refuses another site's page: otherwise it could sign
 * a visitor in to an account of its choosing.
 */
export const refuseCrossSite = (): Middleware => ({
  before: ({ event }) => {
    if (isCrossSite(event)) throw csrfFailed();
  },
});
