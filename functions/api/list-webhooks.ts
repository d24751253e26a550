import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { listWebhooks } from '../../shared/domain/webhooks';

export const handler = bearerRoute({}, async ({ principal }) => json(200, await listWebhooks(principal.account.account_id)));
