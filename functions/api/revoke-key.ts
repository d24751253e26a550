import { sessionRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { revokeKey } from '../../shared/domain/key-management';
import { keyIdFrom } from '../../shared/schemas/keys';

export const handler = sessionRoute({ csrf: true }, async ({ principal, pathParameters }) =>
  json(200, await revokeKey(principal.account.account_id, keyIdFrom(pathParameters))),
);
