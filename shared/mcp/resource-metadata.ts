import type { Deps } from '../domain/deps';
import { MCP_PATH } from '../contracts/mcp';
import type { Event } from '../http/middleware/state';

/** The service's public origin: the configured console's (the edge serves the API beside it), else the request's host. */
export function publicOrigin(deps: Deps, event: Event): string {
  return deps.config.console.url ? new URL(deps.config.console.url).origin : `https://${event.requestContext.domainName}`;
}

/** The protected-resource metadata of the MCP server (RFC 9728). */
export function resourceMetadata(deps: Deps, event: Event) {
  const origin = publicOrigin(deps, event);
  return {
    resource: `${origin}${MCP_PATH}`,
    bearer_methods_supported: ['header'],
    resource_name: 'VPS Provisioning Service',
    resource_documentation: `${origin}/api/v1/openapi.json`,
  };
}
