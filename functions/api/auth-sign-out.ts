import { sessionRoute } from '../../shared/http/api-handler';
import { clearedSessionCookie } from '../../shared/http/cookies';
import { json } from '../../shared/http/responses';
import { signOut } from '../../shared/domain/console-auth';

export const handler = sessionRoute({ csrf: true }, async ({ principal }) => ({
  ...json(200, await signOut(principal.session.session_hash)),
  cookies: [clearedSessionCookie()],
}));
