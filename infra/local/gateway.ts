import type { Deps } from '../../shared/domain/deps';
import type { EntryHandler } from '../../shared/wiring/entry';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { DEFAULT_ROUTE, functionTimeoutSeconds, routes, type RouteDefinition } from '../../shared/routes';
import { routesForPath } from '../../shared/http/route-match';
import { isConsolePath, serveConsoleFile } from './console-files';

/**
 * A local stand-in for the HTTP API: it turns requests into payload-v2 events for the same route table the
 * stack deploys and calls the same handler modules, so a request takes the production code path.
 */
type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyResultV2>;

/** API Gateway's own payload limit; the handlers enforce the service's much smaller one. */
const MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;
/**
 * How long an idle keep-alive connection stays open. Node's 5 s default closed connections that clients were about to
 * reuse (`other side closed`); an HTTP API holds a client's connection at least as long as its 30 s integration
 * timeout, so this does too. The headers of a request on it may take a little longer, so that the connection is
 * always closed as idle, between requests, never while one is being read.
 */
const IDLE_CONNECTION_MS = 30_000;
const HEADERS_TIMEOUT_MS = IDLE_CONNECTION_MS + 1_000;

export interface GatewayOptions {
  readonly root: string;
  readonly port: number;
  readonly host?: string;
  /** Called once per request, for an access log. */
  readonly onRequest?: (line: { method: string; path: string; status: number; ms: number }) => void;
  /** The route table to serve (default: the service's). */
  readonly routes?: readonly RouteDefinition[];
  /** Runs around each handler invocation (the benchmarks record DynamoDB calls per request this way). */
  readonly aroundInvocation?: <T>(route: RouteDefinition, invoke: () => Promise<T>) => Promise<T>;
  /** The built console to serve under /console/, as CloudFront does on AWS. */
  readonly consoleDir?: string;
  /** The runtime whose dependencies the handlers run with (awaited at each request: they may be built after the gateway). */
  readonly deps: () => Promise<Deps>;
}

export interface Gateway {
  readonly url: string;
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_PAYLOAD_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function toEvent(
  request: IncomingMessage,
  url: URL,
  body: Buffer,
  route: string,
  pathParameters: Record<string, string>,
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined && name !== 'cookie') headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const cookies = request.headers.cookie?.split(/;\s*/).filter(Boolean);
  const now = new Date();
  const method = request.method ?? 'GET';
  const query = url.searchParams.size ? Object.fromEntries(url.searchParams) : undefined;
  return {
    version: '2.0',
    routeKey: route,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies?.length ? { cookies } : {}),
    headers,
    ...(query ? { queryStringParameters: query } : {}),
    ...(Object.keys(pathParameters).length ? { pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: route,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body.length ? { body: body.toString('utf8') } : {}),
    isBase64Encoded: false,
  };
}

/** The context Lambda would pass, with the route's deployed timeout. */
function lambdaContext(route: RouteDefinition, requestId: string): Context {
  const { name } = route;
  const deadline = Date.now() + functionTimeoutSeconds(route) * 1000;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${name}`,
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** API Gateway's payload-v2 response rules: a structured result as given, anything else as a 200 JSON body. */
function normalise(result: APIGatewayProxyResultV2): APIGatewayProxyStructuredResultV2 {
  if (typeof result === 'object' && result !== null && 'statusCode' in result) return result;
  return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(result) };
}

function send(response: ServerResponse, result: APIGatewayProxyStructuredResultV2) {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  if (result.cookies?.length) headers['set-cookie'] = result.cookies;
  const body = result.body === undefined ? '' : result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body;
  response.writeHead(result.statusCode ?? 200, headers);
  response.end(body);
}

function internalError(response: ServerResponse) {
  response.writeHead(500, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ message: 'Internal Server Error' }));
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const served = options.routes ?? routes;
  const around = options.aroundInvocation ?? ((_route, invoke) => invoke());
  const handlers = new Map<RouteDefinition, Handler>();
  for (const route of served) {
    const module = (await import(pathToFileURL(resolve(options.root, route.entry)).href)) as { handler: EntryHandler<Handler> | Handler };
    const { handler } = module;
    // A handler built without the service's wiring (the benchmark's floors) runs as a function would, on its own.
    handlers.set(
      route,
      'forRuntime' in handler ? async (event, context) => handler.forRuntime(await options.deps())(event, context) : handler,
    );
  }
  const defaultRoute = served.find((route) => route.path === DEFAULT_ROUTE);
  if (!defaultRoute) throw new Error('the route table has no $default route');

  const server: Server = createServer({ keepAliveTimeout: IDLE_CONNECTION_MS, headersTimeout: HEADERS_TIMEOUT_MS }, (request, response) => {
    const started = performance.now();
    const url = new URL(request.url ?? '/', 'http://localhost');
    const method = request.method ?? 'GET';
    response.on('finish', () =>
      options.onRequest?.({ method, path: url.pathname, status: response.statusCode, ms: performance.now() - started }),
    );
    if (options.consoleDir && isConsolePath(url.pathname)) {
      serveConsoleFile(options.consoleDir, url.pathname, response).catch(() => internalError(response));
      return;
    }
    readBody(request)
      .then(async (body) => {
        if (!body) {
          response.writeHead(413, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ message: 'Request Entity Too Large' }));
          return;
        }
        const match = routesForPath(url.pathname, served).find(({ route }) => route.method === method);
        const route = match?.route ?? defaultRoute;
        const routeKey = match ? `${route.method} ${route.path}` : DEFAULT_ROUTE;
        const event = toEvent(request, url, body, routeKey, match?.pathParameters ?? {});
        const handler = handlers.get(route);
        if (!handler) throw new Error(`no handler for ${routeKey}`);
        const context = lambdaContext(route, event.requestContext.requestId);
        send(response, normalise(await around(route, () => handler(event, context))));
      })
      .catch(() => internalError(response));
  });
  await new Promise<void>((ready, fail) => {
    server.once('error', fail);
    server.listen(options.port, options.host ?? '127.0.0.1', ready);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}
