import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { signUpRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { signUp } from '../../shared/domain/console-auth';

export const handler = route(signUpRoute, async (deps: Deps, { body, sourceAddress }) =>
  json(202, await signUp(deps, body, sourceAddress)),
);
