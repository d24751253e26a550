import { route } from '../../shared/http/route';
import { confirmRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { confirmEmail } from '../../shared/domain/console-auth';

export const handler = route(confirmRoute, async ({ body, sourceAddress }) => json(200, await confirmEmail(body, sourceAddress)));
