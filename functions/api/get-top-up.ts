import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { getTopUpRoute } from '../../shared/contracts/billing';
import { json } from '../../shared/http/responses';
import { findTopUp } from '../../shared/domain/payments';

export const handler = route(getTopUpRoute, async (deps: Deps, { principal, pathParameters }) =>
  json(200, await findTopUp(deps, principal.account.account_id, pathParameters.top_up_id ?? '')),
);
