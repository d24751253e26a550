import { sessionRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { listKeys } from '../../shared/domain/key-management';

export const handler = sessionRoute({ csrf: false }, async ({ principal }) => json(200, await listKeys(principal.account.account_id)));
