import { publicRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { confirmEmail } from '../../shared/domain/console-auth';
import { confirmBodySchema } from '../../shared/schemas/auth';

export const handler = publicRoute({ body: confirmBodySchema }, async ({ body, sourceAddress }) =>
  json(200, await confirmEmail(body.token, sourceAddress)),
);
