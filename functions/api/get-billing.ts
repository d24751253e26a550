import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { getBillingRoute } from '../../shared/contracts/billing';
import { json } from '../../shared/http/responses';
import { billingOverview } from '../../shared/domain/payments';

export const handler = route(getBillingRoute, async (deps: Deps, { principal }) =>
  json(200, await billingOverview(deps, principal.account)),
);
