import { route } from '../../shared/http/route';
import { testWebhookRoute } from '../../shared/contracts/webhooks';
import { json } from '../../shared/http/responses';
import { sendTestEvent } from '../../shared/domain/webhooks';
import { webhookIdFrom } from '../../shared/schemas/webhooks';

export const handler = route(testWebhookRoute, async ({ principal, pathParameters }) =>
  json(202, await sendTestEvent(principal.account.account_id, webhookIdFrom(pathParameters))),
);
