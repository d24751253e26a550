import { route } from '../../shared/http/route';
import { getJobRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { getJobView } from '../../shared/domain/jobs';

export const handler = route(getJobRoute, async ({ principal, pathParameters }) =>
  json(200, await getJobView(principal.account.account_id, pathParameters.job_id)),
);
