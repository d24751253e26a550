import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { deleteInstanceRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { deleteInstance } from '../../shared/domain/lifecycle';
import { instanceIdFrom } from '../../shared/schemas/instances';

export const handler = route(deleteInstanceRoute, async (deps: Deps, { principal, pathParameters }) =>
  json(200, await deleteInstance(deps, principal.account, instanceIdFrom(pathParameters))),
);
