import * as z from '../model/zod';
import { mergeAccess } from '../access';
import { getBillingRoute } from './billing';
import type { BearerRoute, PublicRoute } from './contract';
import { bearerErrors, ok, requestIdHeader } from './docs';
import {
  createInstanceRoute,
  deleteInstanceRoute,
  getInstanceRoute,
  instanceActionRoute,
  listInstancesRoute,
  updateInstanceRoute,
} from './instances';

/** The routes the MCP tools call, in process, as the caller: their function takes what theirs take. */
const mcpToolRoutes = [
  createInstanceRoute,
  listInstancesRoute,
  getInstanceRoute,
  deleteInstanceRoute,
  updateInstanceRoute,
  instanceActionRoute,
  getBillingRoute,
] as const;

export const MCP_PATH = '/mcp';
/** RFC 9728's well-known address of the metadata of the resource at MCP_PATH. */
export const MCP_RESOURCE_METADATA_PATH = `/.well-known/oauth-protected-resource${MCP_PATH}`;

const tags = ['agents'];
const MAX_BODY_KIB = 256;

/** The MCP SDK's refusal of a request it does not read: a JSON-RPC error answering no request id. */
const jsonRpcRefusal = z.object({
  jsonrpc: z.literal('2.0'),
  error: z.object({ code: z.number().int(), message: z.string() }),
  id: z.null(),
});

export const mcpRoute = {
  name: 'Mcp',
  method: 'POST',
  path: MCP_PATH,
  entry: 'functions/api/mcp.ts',
  // The key is checked on every MCP request; each tool call is counted, with idempotency, by the route it calls.
  auth: 'bearer',
  limits: [],
  // wait_for_instance waits up to 20 s, within API Gateway's 30 s.
  timeoutSeconds: 28,
  maxBodyKiB: MAX_BODY_KIB,
  access: mcpToolRoutes.reduce((access, route) => mergeAccess(access, route.access), {}),
  doc: {
    operationId: 'mcp',
    summary: 'Model Context Protocol server (Streamable HTTP, stateless) for AI agents',
    description:
      'A JSON-RPC message of the Model Context Protocol (revision 2026-07-28, and 2025-era clients statelessly). Twelve tools (list_flavors, get_balance, create_instance, list_instances, get_instance, wait_for_instance, power_on, power_off, reboot, resize_instance, delete_instance, update_instance) act as the caller: each call counts against the limits of the REST route it uses and answers with its texts. GET and DELETE are 405: no sessions are kept. A 401 carries `WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource/mcp"`.',
    tags,
    responses: {
      200: ok('The JSON-RPC answer (application/json), or a stream of it (text/event-stream) when progress was asked for.', z.unknown()),
      202: { description: 'A notification or response from the client, accepted (no body).' },
      ...bearerErrors([400, 401, 403]),
      413: {
        description: `The body is over ${MAX_BODY_KIB} KiB: a JSON-RPC error, code -32000, \`Payload Too Large: Request body must not exceed ${MAX_BODY_KIB * 1024} bytes\`.`,
        headers: requestIdHeader,
        schema: jsonRpcRefusal,
      },
    },
  },
} as const satisfies BearerRoute;

export const mcpResourceMetadataRoute = {
  name: 'McpResourceMetadata',
  method: 'GET',
  path: MCP_RESOURCE_METADATA_PATH,
  entry: 'functions/api/mcp-resource-metadata.ts',
  auth: 'none',
  access: {},
  doc: {
    operationId: 'getMcpResourceMetadata',
    summary: 'OAuth 2.0 protected-resource metadata of the MCP server (RFC 9728)',
    description: 'Where MCP clients learn how to authenticate: a Bearer API key in the Authorization header. Public.',
    tags,
    responses: {
      200: ok(
        'The metadata.',
        z.object({
          resource: z.string(),
          bearer_methods_supported: z.array(z.string()),
          resource_name: z.string(),
          resource_documentation: z.string(),
        }),
      ),
    },
  },
} as const satisfies PublicRoute;

export const mcpRoutes = [mcpRoute, mcpResourceMetadataRoute] as const;
