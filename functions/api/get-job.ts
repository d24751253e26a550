import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { getJobView } from '../../shared/domain/jobs';

export const handler = bearerRoute({}, async ({ principal, pathParameters }) =>
  json(200, await getJobView(principal.account.account_id, pathParameters.job_id)),
);
