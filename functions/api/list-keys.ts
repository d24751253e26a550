import { route } from '../../shared/http/route';
import { listKeysRoute } from '../../shared/contracts/keys';
import { json } from '../../shared/http/responses';
import { listKeys } from '../../shared/domain/key-management';

export const handler = route(listKeysRoute, async ({ principal }) => json(200, await listKeys(principal.account.account_id)));
