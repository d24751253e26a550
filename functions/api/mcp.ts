import { mcpEndpoint } from '../../shared/mcp/endpoint';
import { handler as createInstance } from './create-instance';
import { handler as deleteInstance } from './delete-instance';
import { handler as getBilling } from './get-billing';
import { handler as getInstance } from './get-instance';
import { handler as instanceAction } from './instance-action';
import { handler as listInstances } from './list-instances';
import { handler as updateInstance } from './update-instance';

/** The MCP server; its tools call these routes' handlers in process (shared/contracts/mcp.ts lists the same routes). */
export const handler = mcpEndpoint({
  CreateInstance: createInstance,
  DeleteInstance: deleteInstance,
  GetBilling: getBilling,
  GetInstance: getInstance,
  InstanceAction: instanceAction,
  ListInstances: listInstances,
  UpdateInstance: updateInstance,
});
