import { publicRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { resetPassword } from '../../shared/domain/console-auth';
import { resetPasswordBodySchema } from '../../shared/schemas/auth';

export const handler = publicRoute({ body: resetPasswordBodySchema }, async ({ body, sourceAddress }) =>
  json(200, await resetPassword(body, sourceAddress)),
);
