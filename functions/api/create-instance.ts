import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { createInstance } from '../../shared/domain/instances';
import { createInstanceBodySchema } from '../../shared/schemas/instances';

export const handler = bearerRoute(
  { limits: ['general', 'deploy'], body: createInstanceBodySchema, idempotent: true, credentials: true },
  async ({ principal, body }) => json(202, await createInstance(principal.account, body)),
);
