import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { getAccountActivityRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { accountActivity } from '../../shared/domain/account-overview';

export const handler = route(getAccountActivityRoute, async (deps: Deps, { principal }) =>
  json(200, await accountActivity(deps, principal.account.account_id)),
);
