import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { updateInstanceRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { updateInstance } from '../../shared/domain/lifecycle';
import { instanceIdFrom } from '../../shared/schemas/instances';

export const handler = route(updateInstanceRoute, async (deps: Deps, { principal, pathParameters, body }) =>
  json(200, await updateInstance(deps, principal.account, instanceIdFrom(pathParameters), body)),
);
