import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { createWebhookRoute } from '../../shared/contracts/webhooks';
import { json } from '../../shared/http/responses';
import { createWebhook } from '../../shared/domain/webhooks';

export const handler = route(createWebhookRoute, async (deps: Deps, { principal, body }) =>
  json(201, await createWebhook(deps, principal.account.account_id, body)),
);
