import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { performAction } from '../../shared/domain/lifecycle';
import { actionBodySchema, instanceIdFrom } from '../../shared/schemas/instances';

export const handler = bearerRoute({ body: actionBodySchema, idempotent: true }, async ({ principal, pathParameters, body }) =>
  json(200, await performAction(principal.account, instanceIdFrom(pathParameters), body)),
);
