import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { forgotPasswordRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { requestPasswordReset } from '../../shared/domain/console-auth';

export const handler = route(forgotPasswordRoute, async (deps: Deps, { body, sourceAddress }) =>
  json(202, await requestPasswordReset(deps, body, sourceAddress)),
);
