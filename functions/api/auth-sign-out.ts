import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { signOutRoute } from '../../shared/contracts/console';
import { clearedSessionCookie } from '../../shared/http/cookies';
import { json } from '../../shared/http/responses';
import { signOut } from '../../shared/domain/console-auth';

export const handler = route(signOutRoute, async (deps: Deps, { principal }) => ({
  ...json(200, await signOut(deps, principal.session.session_hash)),
  cookies: [clearedSessionCookie(deps)],
}));
