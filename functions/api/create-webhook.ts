import { route } from '../../shared/http/route';
import { createWebhookRoute } from '../../shared/contracts/webhooks';
import { json } from '../../shared/http/responses';
import { createWebhook } from '../../shared/domain/webhooks';

export const handler = route(createWebhookRoute, async ({ principal, body }) =>
  json(201, await createWebhook(principal.account.account_id, body)),
);
