import { McpServer, type CallToolResult, type ServerContext } from '@modelcontextprotocol/server';
import type { Deps } from '../domain/deps';
import type { BearerPrincipal } from '../http/bearer-auth';
import { errorResponse } from '../http/middleware/http-response';
import { guarded } from '../request-guard';
import { getOwnedInstance } from '../store/instances';
import { assertRequestStillAuthorized } from '../store/request-guard';
import { listedSchema } from './listed-schema';
import { callRoute, type McpInvocation, type RouteAnswer, type RouteHandlers } from './route-calls';
import { tools, type ToolDefinition, type ToolIo, type ToolOutcome } from './tools';

const MCP_SERVER_INFO = { name: 'vps-provisioning', version: '1.0.0' } as const;

const INSTRUCTIONS =
  'Deploys and manages Ubuntu 24.04 servers, billed from a prepaid balance. To get a server: create_instance, then wait_for_instance until active (SSH answers), then get_instance for the credentials. Errors carry the API status and text; on 429 wait retry_after seconds.';

/** A refusal in one line: the status, the API's text and explanation, and when to retry. */
function refusalText({ status, headers, body }: RouteAnswer): string {
  const { error, message, retry_after } = (body ?? {}) as { error?: string; message?: string; retry_after?: number };
  const retryAfter = retry_after ?? (headers['Retry-After'] === undefined ? undefined : Number(headers['Retry-After']));
  return [
    `${status} ${error ?? 'Error'}`,
    message && message !== error ? `: ${message}` : '',
    retryAfter === undefined ? '' : ` (retry after ${retryAfter} s)`,
  ].join('');
}

function toolResult(outcome: ToolOutcome): CallToolResult {
  if (outcome.ok) return { content: [{ type: 'text', text: JSON.stringify(outcome.value) }], structuredContent: outcome.value };
  const { status, body } = outcome.answer;
  return {
    isError: true,
    content: [{ type: 'text', text: refusalText(outcome.answer) }],
    structuredContent: { ...(body as Record<string, unknown>), http_status: status },
  };
}

/** A tool's run; anything it throws is answered as the API would answer it (a 401 when the key was revoked meanwhile, 503, 500). */
async function run(tool: ToolDefinition, args: Record<string, unknown>, io: ToolIo, requestId: string): Promise<ToolOutcome> {
  try {
    return await tool.run(args, io);
  } catch (error) {
    const response = errorResponse(error, requestId);
    return { ok: false, answer: { status: response.statusCode, headers: response.headers, body: JSON.parse(response.body ?? 'null') } };
  }
}

function toolIo(deps: Deps, handlers: RouteHandlers, invocation: McpInvocation, principal: BearerPrincipal, ctx: ServerContext): ToolIo {
  const accountId = principal.account.account_id;
  const request = guarded(deps, { keyHash: principal.apiKey.key_hash, accountId });
  const progressToken = ctx.mcpReq._meta?.progressToken;
  return {
    call: (route) => callRoute(deps, handlers, invocation, route),
    readInstance: async (instanceId) => {
      const [instance] = await Promise.all([getOwnedInstance(request, instanceId, accountId), assertRequestStillAuthorized(request)]);
      return instance;
    },
    now: () => Date.now(),
    remainingMs: () => invocation.context.getRemainingTimeInMillis(),
    sleep: (ms) =>
      new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        ctx.mcpReq.signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)), { once: true });
      }),
    progress: async (progress, total, message) => {
      if (progressToken === undefined) return;
      await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress, total, message } });
    },
  };
}

/** The server for one MCP request (stateless: one per request), its tools acting as the caller. */
export function mcpServer(deps: Deps, handlers: RouteHandlers, invocation: McpInvocation, principal: BearerPrincipal): McpServer {
  const server = new McpServer(MCP_SERVER_INFO, { instructions: INSTRUCTIONS });
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: listedSchema(tool.input),
        outputSchema: listedSchema(tool.output),
        annotations: { ...tool.hints },
      },
      async (args: Record<string, unknown>, ctx: ServerContext) =>
        toolResult(await run(tool, args, toolIo(deps, handlers, invocation, principal, ctx), invocation.event.requestContext.requestId)),
    );
  }
  return server;
}
