import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { confirmRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { confirmEmail } from '../../shared/domain/console-auth';

export const handler = route(confirmRoute, async (deps: Deps, { body, sourceAddress }) =>
  json(200, await confirmEmail(deps, body, sourceAddress)),
);
