import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { getInstanceDetail } from '../../shared/domain/instances';
import { instanceIdFrom } from '../../shared/schemas/instances';

export const handler = bearerRoute({}, async ({ principal, pathParameters }) =>
  json(200, await getInstanceDetail(principal.account.account_id, instanceIdFrom(pathParameters))),
);
