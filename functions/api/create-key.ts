import { sessionRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { createKey } from '../../shared/domain/key-management';
import { createKeyBodySchema } from '../../shared/schemas/keys';

export const handler = sessionRoute({ csrf: true, body: createKeyBodySchema }, async ({ principal, body }) =>
  json(201, await createKey(principal.account, body)),
);
