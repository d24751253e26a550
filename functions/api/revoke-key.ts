import { route } from '../../shared/http/route';
import { revokeKeyRoute } from '../../shared/contracts/keys';
import { json } from '../../shared/http/responses';
import { revokeKey } from '../../shared/domain/key-management';
import { keyIdFrom } from '../../shared/schemas/keys';

export const handler = route(revokeKeyRoute, async ({ principal, pathParameters }) =>
  json(200, await revokeKey(principal.account.account_id, keyIdFrom(pathParameters))),
);
