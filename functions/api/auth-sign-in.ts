import { publicRoute } from '../../shared/http/api-handler';
import { sessionCookie } from '../../shared/http/cookies';
import { json } from '../../shared/http/responses';
import { signIn } from '../../shared/domain/console-auth';
import { signInBodySchema } from '../../shared/schemas/auth';

export const handler = publicRoute({ body: signInBodySchema }, async ({ body, sourceAddress }) => {
  const { session, csrfToken, expiresAt, account } = await signIn(body, sourceAddress);
  return {
    ...json(
      200,
      { account_id: account.account_id, email: account.email, csrf_token: csrfToken, expires_at: expiresAt.toISOString() },
      { 'Cache-Control': 'no-store' },
    ),
    cookies: [sessionCookie(session, expiresAt)],
  };
});
