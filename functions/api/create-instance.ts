import { route } from '../../shared/http/route';
import { createInstanceRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { createInstance } from '../../shared/domain/instances';

export const handler = route(createInstanceRoute, async ({ principal, body }) => json(202, await createInstance(principal.account, body)));
