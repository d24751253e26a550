import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { createTopUpRoute } from '../../shared/contracts/billing';
import { json } from '../../shared/http/responses';
import { startTopUp } from '../../shared/domain/payments';

export const handler = route(createTopUpRoute, async (deps: Deps, { principal, body }) =>
  json(201, await startTopUp(deps, principal.account, body)),
);
