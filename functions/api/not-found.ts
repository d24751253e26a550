import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { notFoundRoute } from '../../shared/contracts/meta';
import { json } from '../../shared/http/responses';
import { routesForPath } from '../../shared/http/route-match';

/** The catch-all route: 405 with Allow when the path exists under other methods, 404 otherwise. */
export const handler = route(notFoundRoute, async (_deps: Deps, { event }) => {
  const requestId = event.requestContext.requestId;
  const methods = routesForPath(event.rawPath).map(({ route }) => route.method);
  if (methods.length > 0) {
    return json(405, { error: 'Method not allowed', request_id: requestId }, { Allow: methods.join(', ') });
  }
  return json(404, { error: 'Not found', request_id: requestId });
});
