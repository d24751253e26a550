import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { instanceActionRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { performAction } from '../../shared/domain/lifecycle';
import { instanceInPathBesideKey } from '../../shared/http/instance-early';
import type { Instance } from '../../shared/model/instance';
import { instanceIdFrom } from '../../shared/schemas/instances';

export const handler = route<typeof instanceActionRoute, Instance | undefined>(
  instanceActionRoute,
  async (deps: Deps, { principal, pathParameters, body, early }) =>
    json(200, await performAction(deps, principal.account, instanceIdFrom(pathParameters), body, early)),
  { early: instanceInPathBesideKey },
);
