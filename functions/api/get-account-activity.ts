import { sessionRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { accountActivity } from '../../shared/domain/account-overview';

export const handler = sessionRoute({ csrf: false }, async ({ principal }) =>
  json(200, await accountActivity(principal.account.account_id)),
);
