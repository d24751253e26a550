import { publicRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { requestPasswordReset } from '../../shared/domain/console-auth';
import { forgotPasswordBodySchema } from '../../shared/schemas/auth';

export const handler = publicRoute({ body: forgotPasswordBodySchema }, async ({ body, sourceAddress }) =>
  json(202, await requestPasswordReset(body, sourceAddress)),
);
