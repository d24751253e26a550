import { route } from '../../shared/http/route';
import { signUpRoute } from '../../shared/contracts/console';
import { json } from '../../shared/http/responses';
import { signUp } from '../../shared/domain/console-auth';

export const handler = route(signUpRoute, async ({ body, sourceAddress }) => json(202, await signUp(body, sourceAddress)));
