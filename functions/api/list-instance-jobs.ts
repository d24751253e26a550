import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { listInstanceJobsRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { listInstanceJobViews } from '../../shared/domain/jobs';
import { instanceIdFrom } from '../../shared/schemas/instances';

export const handler = route(listInstanceJobsRoute, async (deps: Deps, { principal, pathParameters }) =>
  json(200, await listInstanceJobViews(deps, principal.account.account_id, instanceIdFrom(pathParameters))),
);
