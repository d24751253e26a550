import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { createWebhook } from '../../shared/domain/webhooks';
import { createWebhookBodySchema } from '../../shared/schemas/webhooks';

export const handler = bearerRoute({ body: createWebhookBodySchema }, async ({ principal, body }) =>
  json(201, await createWebhook(principal.account.account_id, body)),
);
