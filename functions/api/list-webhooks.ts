import { route } from '../../shared/http/route';
import { listWebhooksRoute } from '../../shared/contracts/webhooks';
import { json } from '../../shared/http/responses';
import { listWebhooks } from '../../shared/domain/webhooks';

export const handler = route(listWebhooksRoute, async ({ principal }) => json(200, await listWebhooks(principal.account.account_id)));
