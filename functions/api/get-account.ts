import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { getAccountRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { accountView } from '../../shared/domain/account-overview';

export const handler = route(getAccountRoute, async (deps: Deps, { principal }) =>
  json(200, accountView(principal.account, deps.clock.now().getTime())),
);
