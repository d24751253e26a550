import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { signInRoute } from '../../shared/contracts/console';
import { sessionCookie } from '../../shared/http/cookies';
import { json } from '../../shared/http/responses';
import { signIn } from '../../shared/domain/console-auth';

export const handler = route(signInRoute, async (deps: Deps, { body, sourceAddress }) => {
  const { session, csrfToken, expiresAt, account } = await signIn(deps, body, sourceAddress);
  return {
    ...json(
      200,
      { account_id: account.account_id, email: account.email, csrf_token: csrfToken, expires_at: expiresAt.toISOString() },
      { 'Cache-Control': 'no-store' },
    ),
    cookies: [sessionCookie(deps, session, expiresAt)],
  };
});
