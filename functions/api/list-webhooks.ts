import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { listWebhooksRoute } from '../../shared/contracts/webhooks';
import { json } from '../../shared/http/responses';
import { listWebhooks } from '../../shared/domain/webhooks';

export const handler = route(listWebhooksRoute, async (deps: Deps, { principal }) =>
  json(200, await listWebhooks(deps, principal.account.account_id)),
);
