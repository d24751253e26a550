import { bearerRoute } from '../../shared/http/api-handler';
import { json } from '../../shared/http/responses';
import { listInstanceSummaries } from '../../shared/domain/instances';
import { listInstancesQuerySchema } from '../../shared/schemas/instances';
import { parseOrBadRequest } from '../../shared/schemas/validation';

export const handler = bearerRoute({}, async ({ principal, queryParameters }) => {
  const query = parseOrBadRequest(listInstancesQuerySchema, queryParameters);
  const { instances, nextPageToken } = await listInstanceSummaries(principal.account.account_id, query);
  const next = new URLSearchParams({
    ...(query.per_page === undefined ? {} : { per_page: String(query.per_page) }),
    page_token: nextPageToken ?? '',
  });
  return json(200, instances, nextPageToken ? { Link: `</api/v1/instances?${next}>; rel="next"` } : {});
});
