import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { deleteWebhookRoute } from '../../shared/contracts/webhooks';
import { json } from '../../shared/http/responses';
import { deleteWebhook } from '../../shared/domain/webhooks';
import { webhookIdFrom } from '../../shared/schemas/webhooks';

export const handler = route(deleteWebhookRoute, async (deps: Deps, { principal, pathParameters }) =>
  json(200, await deleteWebhook(deps, principal.account.account_id, webhookIdFrom(pathParameters))),
);
