import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { Client, StreamableHTTPClientTransport, type FetchLike } from '@modelcontextprotocol/client';
import { handler as mcpHandler } from '../../functions/api/mcp';
import type { TestRuntime } from './runtime';

export type Era = 'legacy' | 'modern';

/** The protocol revision a modern client pins; a legacy client speaks 2025's initialize handshake. */
const MODERN_REVISION = '2026-07-28';

/**
 * The MCP handler called in process, as a fetch: the request becomes the gateway's event, the function's answer the
 * response (no gateway, no network).
 */
function inProcessFetch(runtime: TestRuntime): FetchLike {
  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => (headers[name] = value));
    const body = await request.text();
    const now = new Date();
    const event: APIGatewayProxyEventV2 = {
      version: '2.0',
      routeKey: `${request.method} /mcp`,
      rawPath: url.pathname,
      rawQueryString: url.search.slice(1),
      headers,
      requestContext: {
        accountId: '000000000000',
        apiId: 'local',
        domainName: url.host,
        domainPrefix: 'local',
        http: {
          method: request.method,
          path: url.pathname,
          protocol: 'HTTP/1.1',
          sourceIp: '127.0.0.1',
          userAgent: headers['user-agent'] ?? '',
        },
        requestId: crypto.randomUUID(),
        routeKey: `${request.method} /mcp`,
        stage: '$default',
        time: now.toUTCString(),
        timeEpoch: now.getTime(),
      },
      ...(body ? { body } : {}),
      isBase64Encoded: false,
    };
    const deadline = Date.now() + 29_000;
    const context = {
      awsRequestId: event.requestContext.requestId,
      functionName: 'Mcp',
      getRemainingTimeInMillis: () => deadline - Date.now(),
    };
    const result = await mcpHandler.forRuntime(runtime.deps)(event, context as Context & { request: never });
    return new Response(result.body ?? null, { status: result.statusCode, headers: result.headers });
  };
}

/** A client of the service's MCP server with the key, over the local gateway or in process, speaking `era`'s protocol. */
export async function mcpClient(
  runtime: TestRuntime,
  apiKey: string,
  { era = 'legacy', inProcess = false }: { era?: Era; inProcess?: boolean } = {},
) {
  const client = new Client(
    { name: 'vps-tests', version: '1.0.0' },
    era === 'modern' ? { versionNegotiation: { mode: { pin: MODERN_REVISION } } } : {},
  );
  const transport = new StreamableHTTPClientTransport(new URL(`${runtime.baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${apiKey}` } },
    ...(inProcess ? { fetch: inProcessFetch(runtime) } : {}),
  });
  await client.connect(transport);
  return client;
}

/** One tools/call as a bare JSON-RPC POST (a 2025-era client's, stateless): the HTTP status and the call's result. */
export async function rawToolCall(runtime: TestRuntime, apiKey: string, name: string, args: Record<string, unknown>) {
  const response = await fetch(`${runtime.baseUrl}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const text = await response.text();
  // A JSON body, or an event stream whose last message is the answer.
  const json = response.headers.get('content-type')?.startsWith('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .at(-1)
        ?.slice('data: '.length)
    : text;
  const message = json ? (JSON.parse(json) as { result?: { structuredContent?: Record<string, any>; isError?: boolean } }) : {};
  return { status: response.status, result: message.result };
}
