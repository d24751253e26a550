import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { listInstanceSummaries } from '../../shared/domain/instances';

export const handler = bearerRoute({}, async ({ principal }) =>
  json(200, await listInstanceSummaries(principal.account.account_id)),
);
