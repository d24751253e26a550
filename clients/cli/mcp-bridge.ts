import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const BRIDGE_INFO = { name: 'vps-provisioning', version: '1.0.0' } as const;

/**
 * `vps mcp`: the service's MCP server for clients that start servers as processes (desktop apps). It speaks MCP on
 * stdin and stdout and passes every tools/list and tools/call to the service's `/mcp` with the CLI's key, progress
 * included; the tools, their texts and limits are the service's own. Nothing but protocol goes to stdout.
 */
export async function runMcpBridge(apiUrl: string, apiKey: string): Promise<void> {
  const remote = new Client({ name: 'vps-cli', version: BRIDGE_INFO.version });
  await remote.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', apiUrl), { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } }),
  );
  const instructions = remote.getInstructions();
  const served = serveStdio(
    () => {
      const server = new Server(BRIDGE_INFO, { capabilities: { tools: {} }, ...(instructions ? { instructions } : {}) });
      server.setRequestHandler('tools/list', (request) => remote.listTools(request.params));
      server.setRequestHandler('tools/call', async (request, ctx) => {
        const progressToken = request.params._meta?.progressToken;
        // Each progress is passed on before the result: one written after it would reach a client that has stopped
        // listening for that request, and be dropped.
        const forwarded: Promise<unknown>[] = [];
        const result = await remote.callTool(
          { name: request.params.name, arguments: request.params.arguments },
          {
            signal: ctx.mcpReq.signal,
            // Waits take up to 20 s on the server; the call itself must not time out first.
            timeout: 60_000,
            ...(progressToken === undefined
              ? {}
              : {
                  onprogress: (progress) => {
                    forwarded.push(
                      ctx.mcpReq
                        .notify({ method: 'notifications/progress', params: { ...progress, progressToken } })
                        .catch(() => undefined),
                    );
                  },
                }),
          },
        );
        await Promise.all(forwarded);
        return result;
      });
      return server;
    },
    { onerror: (error) => process.stderr.write(`vps mcp: ${error.message}\n`) },
  );
  await new Promise<void>((resolve) => process.stdin.once('close', resolve));
  await served.close();
  await remote.close();
}
