import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { listInstancesRoute } from '../../shared/contracts/instances';
import { json } from '../../shared/http/responses';
import { listInstanceSummaries } from '../../shared/domain/instances';

export const handler = route(listInstancesRoute, async (deps: Deps, { principal, query }) => {
  const { instances, nextPageToken } = await listInstanceSummaries(deps, principal.account.account_id, query);
  // The next page keeps the filters: everything but the token, as given.
  const { page_token: _token, per_page, ...filters } = query;
  const next = new URLSearchParams({
    ...(per_page === undefined ? {} : { per_page: String(per_page) }),
    ...filters,
    page_token: nextPageToken ?? '',
  });
  return json(200, instances, nextPageToken ? { Link: `<${listInstancesRoute.path}?${next}>; rel="next"` } : {});
});
