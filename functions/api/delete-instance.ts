import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { deleteInstance } from '../../shared/domain/lifecycle';
import { instanceIdFrom } from '../../shared/schemas/instances';

export const handler = bearerRoute({}, async ({ principal, pathParameters }) =>
  json(200, await deleteInstance(principal.account, instanceIdFrom(pathParameters))),
);
