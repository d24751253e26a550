import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy in front of DynamoDB Local that can hold one request back, as a stalled store does: the operation is
 * sent, and carried out, only once the stall ends. The requests before and after it pass at once.
 */
export interface StallingProxy {
  /** The endpoint to give the service instead of DynamoDB Local's. */
  readonly endpoint: string;
  /**
   * Holds the next request for `operation` (e.g. `TransactWriteItems`), and naming `containing` when given, for `ms`;
   * resolves when it was sent on.
   */
  stallNext(operation: string, ms: number, containing?: string): Promise<void>;
  close(): Promise<void>;
}

export async function startStallingProxy(target: string): Promise<StallingProxy> {
  const { hostname, port } = new URL(target);
  let armed: { target: string; containing: string; ms: number; released: () => void } | undefined;
  const sockets = new Set<Socket>();

  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => upstream.end());
    upstream.on('close', () => client.destroy());
    upstream.pipe(client);
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      const stall = armed && text.includes(armed.target) && text.includes(armed.containing) ? armed : undefined;
      if (!stall) {
        upstream.write(chunk);
        return;
      }
      armed = undefined;
      // Whatever else comes on this connection waits behind the held request, in order.
      client.pause();
      setTimeout(() => {
        upstream.write(chunk);
        client.resume();
        stall.released();
      }, stall.ms);
    });
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('the proxy has no address');

  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    stallNext(operation, ms, containing = '') {
      return new Promise((released) => {
        armed = { target: `DynamoDB_20120810.${operation}`, containing, ms, released };
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((done) => server.close(done));
    },
  };
}
