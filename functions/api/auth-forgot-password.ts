import { route } from '../../shared/http/route';
import { forgotPasswordRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { requestPasswordReset } from '../../shared/domain/console-auth';

export const handler = route(forgotPasswordRoute, async ({ body, sourceAddress }) =>
  json(202, await requestPasswordReset(body, sourceAddress)),
);
