import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { mcpResourceMetadataRoute } from '../../shared/contracts/mcp';
import { json } from '../../shared/http/responses';
import { resourceMetadata } from '../../shared/mcp/resource-metadata';

export const handler = route(mcpResourceMetadataRoute, async (deps: Deps, { event }) => json(200, resourceMetadata(deps, event)));
