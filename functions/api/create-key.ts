import { route } from '../../shared/http/route';
import { createKeyRoute } from '../../shared/contracts/keys';
import { json } from '../../shared/http/responses';
import { createKey } from '../../shared/domain/key-management';

export const handler = route(createKeyRoute, async ({ principal, body }) => json(201, await createKey(principal.account, body)));
