import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface OutageProxy {
  /** Where to point clients instead of the target. */
  readonly endpoint: string;
  /** Cuts every open connection and refuses new ones for `ms`; resolves once connections are refused, with the end of the outage. */
  outage(ms: number): Promise<{ readonly over: Promise<void> }>;
  close(): Promise<void>;
}

/**
 * A loopback TCP proxy in front of a service (the run's DynamoDB Local): an outage closes its port, so clients see
 * what they would see of an unreachable service (ECONNREFUSED, connections reset), while the service itself, which
 * other test files share, runs on untouched.
 */
export async function startOutageProxy(target: string): Promise<OutageProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  let server: Server | undefined;
  let listenPort = 0;

  const open = () =>
    new Promise<void>((ready, fail) => {
      const listening = createServer((client) => {
        const service = connect(Number(port), hostname);
        track(client);
        track(service);
        client.on('close', () => service.destroy());
        service.on('close', () => client.destroy());
        client.pipe(service).pipe(client);
      });
      listening.once('error', fail);
      // The same port after an outage: the clients' configuration, read once, points at it.
      listening.listen(listenPort, '127.0.0.1', () => {
        listenPort = (listening.address() as AddressInfo).port;
        server = listening;
        ready();
      });
    });

  const shut = async () => {
    const closing = server;
    server = undefined;
    if (!closing) return;
    const closed = new Promise((done) => closing.close(done));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  await open();
  return {
    endpoint: `http://127.0.0.1:${listenPort}`,
    async outage(ms) {
      await shut();
      return { over: new Promise<void>((done) => setTimeout(done, ms)).then(open) };
    },
    close: shut,
  };
}
