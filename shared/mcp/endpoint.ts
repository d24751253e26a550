import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { createMcpHandler, originValidationResponse } from '@modelcontextprotocol/server';
import type { Deps } from '../domain/deps';
import { MCP_RESOURCE_METADATA_PATH, mcpRoute } from '../contracts/mcp';
import { Failure } from '../model/errors';
import { logger, tracer } from '../observability';
import { traceHandler } from '../tracing';
import { authenticateOwner, findActiveKey } from '../http/bearer-auth';
import { edgeOrigin } from '../http/middleware/edge-origin';
import { limitingFailures } from '../http/middleware/failed-authentication';
import { httpResponse } from '../http/middleware/http-response';
import type { Event, Middleware, StatefulContext } from '../http/middleware/state';
import type { ApiResponse } from '../http/responses';
import type { RouteHandler } from '../http/route';
import { entryHandler, type EntryHandler } from '../wiring/entry';
import type { RouteHandlers } from './route-calls';
import { mcpServer } from './server';
import { publicOrigin } from './resource-metadata';

/**
 * The API's Bearer checks, in its order and with its texts, on every MCP request (a key revoked between two calls is
 * refused at the next); counted against no window, since each tool call is counted by the route it calls. A 401 names
 * the resource metadata, as MCP's authorization asks (RFC 9728, section 5.1).
 */
const mcpBearerAuth = (deps: Deps): Middleware => ({
  before: async ({ event, context }) => {
    try {
      const apiKey = await limitingFailures(deps, event, findActiveKey(deps, event.headers.authorization));
      context.request.apiKey = apiKey;
      context.request.bearer = Promise.resolve(await limitingFailures(deps, event, authenticateOwner(deps, apiKey)));
    } catch (error) {
      if (!(error instanceof Failure) || error.kind !== 'unauthenticated') throw error;
      const metadata = `${publicOrigin(deps, event)}${MCP_RESOURCE_METADATA_PATH}`;
      throw new Failure(error.kind, error.message, error.details, {
        ...error.headers,
        'WWW-Authenticate': `Bearer resource_metadata="${metadata}"`,
      });
    }
  },
});

/** The gateway's event as the web request the MCP SDK serves. */
function webRequest(event: Event): Request {
  const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
  const headers = new Headers();
  for (const [name, value] of Object.entries(event.headers)) if (value !== undefined) headers.set(name, value);
  const method = event.requestContext.http.method;
  const body = event.body === undefined ? undefined : event.isBase64Encoded ? Buffer.from(event.body, 'base64') : event.body;
  return new Request(`https://${event.requestContext.domainName}${event.rawPath}${query}`, {
    method,
    headers,
    ...(method === 'GET' || method === 'HEAD' ? {} : { body }),
  });
}

/** Headers of the SDK's answer that a buffered answer through the gateway does not carry, or carries as every route's. */
const replacedHeaders = new Set(['cache-control', 'connection', 'keep-alive', 'transfer-encoding', 'x-content-type-options']);

/** The SDK's answer as the gateway's (a stream, when progress was sent, is read to its end: HTTP APIs buffer it). */
async function apiResponse(response: Response): Promise<ApiResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!replacedHeaders.has(name)) headers[name] = value;
  });
  return {
    statusCode: response.status,
    headers: { ...headers, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' },
    body: await response.text(),
  };
}

/**
 * The MCP endpoint's function: the routes' response shaping, tracing, logging context and edge check, the API's
 * Bearer checks, then the MCP SDK's stateless handler over a server built for this request, whose tools call the
 * given route handlers in process.
 */
export function mcpEndpoint(handlers: RouteHandlers): EntryHandler<RouteHandler> {
  return entryHandler((deps: Deps): RouteHandler =>
    middy<Event, ApiResponse, Error, StatefulContext>()
      .use(httpResponse())
      .use(traceHandler(tracer))
      .use(injectLambdaContext(logger, { resetKeys: true }))
      .use(edgeOrigin(deps))
      .use(mcpBearerAuth(deps))
      .handler(async (event, context) => {
        const principal = await context.request.bearer;
        if (!principal) throw new Error('authentication did not run');
        logger.appendKeys({ account_id: principal.account.account_id });
        const mcp = createMcpHandler(() => mcpServer(deps, handlers, { event, context }, principal), {
          legacy: 'stateless',
          // The route's own limit, not the SDK's 4 MiB: a larger body is answered 413 with the SDK's JSON-RPC error.
          maxRequestBodySize: mcpRoute.maxBodyKiB * 1024,
          onerror: (error) => logger.warn('MCP request refused or failed', { error }),
        });
        const request = webRequest(event);
        try {
          // A browser's request from another site (a page using DNS rebinding, say) is refused: only the service's
          // own pages may call it from a browser; agents send no Origin.
          const crossSite = originValidationResponse(request, [new URL(publicOrigin(deps, event)).hostname]);
          return await apiResponse(crossSite ?? (await mcp.fetch(request)));
        } finally {
          await mcp.close();
        }
      }),
  );
}
