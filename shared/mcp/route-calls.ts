import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { Deps } from '../domain/deps';
import { functionTimeoutSeconds, type RouteContract } from '../contracts/contract';
import { EDGE_ORIGIN_HEADER } from '../http/edge-origin';
import { IDEMPOTENCY_HEADER } from '../http/idempotency';
import type { Event, StatefulContext } from '../http/middleware/state';
import type { RouteHandler } from '../http/route';
import type { EntryHandler } from '../wiring/entry';

/** The route handlers a tool may call, by their contract's name. */
export type RouteHandlers = Readonly<Record<string, EntryHandler<RouteHandler>>>;

/** One request of a tool to a route, as a client would send it. */
export interface RouteCall {
  readonly contract: RouteContract;
  readonly pathParameters?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string>>;
  readonly body?: unknown;
  readonly idempotencyKey?: string;
}

/** A route's answer: its status, headers and parsed JSON body. */
export interface RouteAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
}

/** The MCP request the tools run for: its gateway event (the caller's key and address) and its invocation. */
export interface McpInvocation {
  readonly event: Event;
  readonly context: Context;
}

/**
 * Runs a route's own handler, in process, for a tool: the same event the gateway would build for the request
 * (the caller's Authorization, address and Idempotency-Key), so the route's key checks, rate limits, idempotency,
 * use case and texts are the REST route's, exactly. Its deadline is the route's, within what the MCP request has left.
 */
export async function callRoute(deps: Deps, handlers: RouteHandlers, invocation: McpInvocation, call: RouteCall): Promise<RouteAnswer> {
  const handler = handlers[call.contract.name];
  if (!handler) throw new Error(`no handler for ${call.contract.name}`);
  const event = routeEvent(deps, invocation.event, call);
  const response = await handler.forRuntime(deps)(event, routeContext(invocation.context, call.contract, event.requestContext.requestId));
  return {
    status: response.statusCode,
    headers: response.headers,
    body: response.body ? (JSON.parse(response.body) as unknown) : null,
  };
}

function routeEvent(deps: Deps, mcp: Event, { contract, pathParameters = {}, query, body, idempotencyKey }: RouteCall): Event {
  const path = contract.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(pathParameters[name] ?? ''));
  const method = contract.method === 'ANY' ? 'GET' : contract.method;
  const headers: Record<string, string> = { 'user-agent': mcp.headers['user-agent'] ?? 'mcp' };
  for (const name of ['authorization', 'host', 'cloudfront-viewer-address']) {
    const value = mcp.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  // The MCP request came through the edge (its own check ran first and took the header out): so does this one.
  const { edgeOriginSecret } = deps.config;
  if (edgeOriginSecret !== undefined) headers[EDGE_ORIGIN_HEADER] = edgeOriginSecret;
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey !== undefined) headers[IDEMPOTENCY_HEADER] = idempotencyKey;
  const queryString = new URLSearchParams(query).toString();
  const requestId = randomUUID();
  return {
    ...mcp,
    routeKey: `${method} ${contract.path}`,
    rawPath: path,
    rawQueryString: queryString,
    cookies: undefined,
    headers,
    queryStringParameters: query && Object.keys(query).length > 0 ? { ...query } : undefined,
    pathParameters: Object.keys(pathParameters).length > 0 ? { ...pathParameters } : undefined,
    requestContext: {
      ...mcp.requestContext,
      requestId,
      routeKey: `${method} ${contract.path}`,
      http: { ...mcp.requestContext.http, method, path },
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    isBase64Encoded: false,
  };
}

/** The route's own budget, within what the MCP request has left. */
function routeContext(mcp: Context, contract: RouteContract, requestId: string): StatefulContext {
  const deadline = Math.min(Date.now() + functionTimeoutSeconds(contract) * 1000, Date.now() + mcp.getRemainingTimeInMillis());
  return {
    ...mcp,
    awsRequestId: requestId,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    request: { windows: [] },
  };
}
