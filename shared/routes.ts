import type { FunctionAccess } from './access';
import { takesKeyOrSession, type RouteAuth, type RouteContract } from './contracts/contract';
import { billingRoutes } from './contracts/billing';
import { consoleRoutes } from './contracts/console';
import { instanceRoutes } from './contracts/instances';
import { keyRoutes } from './contracts/keys';
import { mcpRoutes } from './contracts/mcp';
import { notFoundRoute, openApiDocumentRoute } from './contracts/meta';
import { webhookRoutes } from './contracts/webhooks';

export {
  ANSWER_RESERVE_SECONDS,
  DEFAULT_ROUTE,
  DEFAULT_ROUTE_TIMEOUT_SECONDS,
  functionTimeoutSeconds,
  type RouteAuth,
  type RouteContract as RouteDefinition,
} from './contracts/contract';

/**
 * Every route's contract (see shared/contracts/), in one table: the CDK stack builds one Lambda per route behind the
 * HTTP API from it, the local gateway dispatches the same routes to the same handler modules, the catch-all route
 * reads it to answer 405 with the methods a path does have, and the OpenAPI document describes it.
 */
export const routes: readonly RouteContract[] = [
  ...instanceRoutes,
  ...keyRoutes,
  ...webhookRoutes,
  ...billingRoutes,
  ...mcpRoutes,
  openApiDocumentRoute,
  ...consoleRoutes,
  notFoundRoute,
];

/** Tables every route of an auth kind touches before its own work. */
export const authAccess: Record<RouteAuth, FunctionAccess> = {
  // Counters: the rate-limit windows (GetItem only to give a refused create's deploy unit back), and the failed
  // authentications of each source address.
  bearer: { tables: { apiKeys: ['GetItem', 'UpdateItem'], accounts: ['GetItem'], counters: ['GetItem', 'UpdateItem'] } },
  session: { tables: { sessions: ['GetItem'], accounts: ['GetItem'], counters: ['UpdateItem'] } },
  // Either of the two above.
  account: {
    tables: { apiKeys: ['GetItem', 'UpdateItem'], accounts: ['GetItem'], counters: ['GetItem', 'UpdateItem'], sessions: ['GetItem'] },
  },
  none: {},
};

/** What a route touches to authenticate: a console-enabled Bearer route takes either way in, as an account route does. */
export const routeAuthAccess = (route: RouteContract): FunctionAccess =>
  takesKeyOrSession(route) ? authAccess.account : authAccess[route.auth];
