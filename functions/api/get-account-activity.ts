import { route } from '../../shared/http/route';
import { getAccountActivityRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { accountActivity } from '../../shared/domain/account-overview';

export const handler = route(getAccountActivityRoute, async ({ principal }) =>
  json(200, await accountActivity(principal.account.account_id)),
);
