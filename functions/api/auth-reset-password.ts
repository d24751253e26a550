import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { resetPasswordRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { resetPassword } from '../../shared/domain/console-auth';

export const handler = route(resetPasswordRoute, async (deps: Deps, { body, sourceAddress }) =>
  json(200, await resetPassword(deps, body, sourceAddress)),
);
