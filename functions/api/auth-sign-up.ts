import { publicRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { signUp } from '../../shared/domain/console-auth';
import { signUpBodySchema } from '../../shared/schemas/auth';

export const handler = publicRoute({ body: signUpBodySchema }, async ({ body, sourceAddress }) =>
  json(202, await signUp(body, sourceAddress)),
);
