import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { deleteInstanceRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { deleteInstance } from '../../shared/domain/lifecycle';
import { instanceInPathBesideKey } from '../../shared/http/instance-early';
import type { Instance } from '../../shared/model/instance';
import { instanceIdFrom } from '../../shared/schemas/instances';

export const handler = route<typeof deleteInstanceRoute, Instance | undefined>(
  deleteInstanceRoute,
  async (deps: Deps, { principal, pathParameters, early }) =>
    json(200, await deleteInstance(deps, principal.account, instanceIdFrom(pathParameters), early)),
  { early: instanceInPathBesideKey },
);
