import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { authSessionRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';

/** The signed-in page's own session, with its CSRF token: readable only by a page of this origin. */
export const handler = route(authSessionRoute, async (_deps: Deps, { principal }) =>
  json(
    200,
    {
      account_id: principal.account.account_id,
      email: principal.account.email,
      csrf_token: principal.csrfToken,
      expires_at: new Date(principal.session.expires_at * 1000).toISOString(),
    },
    { 'Cache-Control': 'no-store' },
  ),
);
