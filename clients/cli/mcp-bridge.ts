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
  // Progress is routed here by the caller's own token, not by the SDK's per-request handler: the SDK drops a progress
  // that arrives in the same read as its request's result (it dispatches notifications a microtask late, after the
  // result has removed the request's handler), which a buffered HTTP answer makes the common case.
  const progressTargets = new Map<string | number, (progress: { progress: number; total?: number; message?: string }) => void>();
  remote.setNotificationHandler('notifications/progress', ({ params: { progressToken, ...progress } }) => {
    progressTargets.get(progressToken)?.(progress);
  });
  const served = serveStdio(
    () => {
      const server = new Server(BRIDGE_INFO, { capabilities: { tools: {} }, ...(instructions ? { instructions } : {}) });
      server.setRequestHandler('tools/list', (request) => remote.listTools(request.params));
      server.setRequestHandler('tools/call', async (request, ctx) => {
        const progressToken = request.params._meta?.progressToken;
        // Each progress is passed on before the result: one written after it would reach a client that has stopped
        // listening for that request, and be dropped.
        const forwarded: Promise<unknown>[] = [];
        if (progressToken !== undefined) {
          progressTargets.set(progressToken, (progress) =>
            forwarded.push(
              ctx.mcpReq.notify({ method: 'notifications/progress', params: { ...progress, progressToken } }).catch(() => undefined),
            ),
          );
        }
        try {
          const result = await remote.callTool(
            {
              name: request.params.name,
              arguments: request.params.arguments,
              ...(progressToken === undefined ? {} : { _meta: { progressToken } }),
            },
            // Waits take up to 20 s on the server; the call itself must not time out first.
            { signal: ctx.mcpReq.signal, timeout: 60_000 },
          );
          // Progress that came with the result is dispatched a microtask late: let it reach its target first.
          await new Promise((resolve) => setImmediate(resolve));
          await Promise.all(forwarded);
          return result;
        } finally {
          if (progressToken !== undefined) progressTargets.delete(progressToken);
        }
      });
      return server;
    },
    { onerror: (error) => process.stderr.write(`vps mcp: ${error.message}\n`) },
  );
  await new Promise<void>((resolve) => process.stdin.once('close', resolve));
  await served.close();
  await remote.close();
}
