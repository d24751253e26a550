import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { setAutoRechargeRoute } from '../../shared/contracts/billing';
import { json } from '../../shared/http/responses';
import { configureAutoRecharge } from '../../shared/domain/payments';

export const handler = route(setAutoRechargeRoute, async (deps: Deps, { principal, body }) =>
  json(200, await configureAutoRecharge(deps, principal.account, body)),
);
