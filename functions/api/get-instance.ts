import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { getInstanceRoute } from '../../shared/contracts/instances';
import { json, STORED_STATE_WARNING } from '../../shared/http/responses';
import { getInstanceDetail, getInstanceDetailBesideKey, type InstanceReading } from '../../shared/domain/instances';
import { instanceIdFrom } from '../../shared/schemas/instances';

export const handler = route<typeof getInstanceRoute, InstanceReading>(
  getInstanceRoute,
  async (deps: Deps, { principal, pathParameters, early }) => {
    const { detail, stored } = await (early ?? getInstanceDetail(deps, principal.account.account_id, instanceIdFrom(pathParameters)));
    return json(200, detail, stored ? STORED_STATE_WARNING : {});
  },
  {
    early: (deps, { pathParameters }, key) => getInstanceDetailBesideKey(deps, instanceIdFrom(pathParameters ?? {}), key),
  },
);
