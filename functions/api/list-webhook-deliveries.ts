import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { listDeliveryAttempts } from '../../shared/domain/webhooks';
import { webhookIdFrom } from '../../shared/schemas/webhooks';

export const handler = bearerRoute({}, async ({ principal, pathParameters }) =>
  json(200, await listDeliveryAttempts(principal.account.account_id, webhookIdFrom(pathParameters))),
);
