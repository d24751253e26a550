import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { revokeKeyRoute } from '../../shared/contracts/keys';
import { json } from '../../shared/http/responses';
import { revokeKey } from '../../shared/domain/key-management';
import { keyIdFrom } from '../../shared/schemas/keys';

export const handler = route(revokeKeyRoute, async (deps: Deps, { principal, pathParameters }) =>
  json(200, await revokeKey(deps, principal.account.account_id, keyIdFrom(pathParameters))),
);
