import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { getInstanceRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { getInstanceDetail } from '../../shared/domain/instances';
import { instanceIdFrom } from '../../shared/schemas/instances';

export const handler = route(getInstanceRoute, async (deps: Deps, { principal, pathParameters }) =>
  json(200, await getInstanceDetail(deps, principal.account.account_id, instanceIdFrom(pathParameters))),
);
