import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { listInstancesRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { listInstanceSummaries } from '../../shared/domain/instances';

export const handler = route(listInstancesRoute, async (deps: Deps, { principal, query }) => {
  const { instances, nextPageToken } = await listInstanceSummaries(deps, principal.account.account_id, query);
  const next = new URLSearchParams({
    ...(query.per_page === undefined ? {} : { per_page: String(query.per_page) }),
    page_token: nextPageToken ?? '',
  });
  return json(200, instances, nextPageToken ? { Link: `<${listInstancesRoute.path}?${next}>; rel="next"` } : {});
});
