import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { listWebhookDeliveriesRoute } from '../../shared/contracts/webhooks';
import { json } from '../../shared/http/responses';
import { listDeliveryAttempts } from '../../shared/domain/webhooks';
import { webhookIdFrom } from '../../shared/schemas/webhooks';

export const handler = route(listWebhookDeliveriesRoute, async (deps: Deps, { principal, pathParameters }) =>
  json(200, await listDeliveryAttempts(deps, principal.account.account_id, webhookIdFrom(pathParameters))),
);
