import { route } from '../../shared/http/route';
import { resetPasswordRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { resetPassword } from '../../shared/domain/console-auth';

export const handler = route(resetPasswordRoute, async ({ body, sourceAddress }) => json(200, await resetPassword(body, sourceAddress)));
