import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { testWebhookRoute } from '../../shared/contracts/webhooks';
import { json } from '../../shared/http/responses';
import { sendTestEvent } from '../../shared/domain/webhooks';
import { webhookIdFrom } from '../../shared/schemas/webhooks';

export const handler = route(testWebhookRoute, async (deps: Deps, { principal, pathParameters }) =>
  json(202, await sendTestEvent(deps, principal.account.account_id, webhookIdFrom(pathParameters))),
);
