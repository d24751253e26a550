import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { getJobRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { getJobView } from '../../shared/domain/jobs';

export const handler = route(getJobRoute, async (deps: Deps, { principal, pathParameters }) =>
  json(200, await getJobView(deps, principal.account.account_id, pathParameters.job_id)),
);
