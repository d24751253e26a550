import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { postDelivery } from '../../shared/webhooks/sender';

/** A receiver on loopback answering with `status` (and a redirect to `/elsewhere` on 3xx), counting hits per path. */
async function listen(status: number, delayMs = 0): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((request, response) => {
    hits.push(request.url ?? '');
    request.resume();
    setTimeout(() => response.writeHead(status, status >= 300 && status < 400 ? { location: '/elsewhere' } : {}).end(), delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

describe('postDelivery', () => {
  it('refuses at connection time a name that now resolves to loopback (DNS rebinding), sending nothing', async () => {
    const { server, port, hits } = await listen(200);

    const outcome = await postDelivery(
      new URL(`http://rebound.example:${port}/hook`),
      '{}',
      {},
      {
        policy: { allowLoopback: false },
        timeoutMs: 2_000,
        resolve: async () => ['127.0.0.1'],
      },
    );

    expect(outcome).toEqual({ status: null, error: 'the receiver resolves to a refused address' });
    expect(hits).toEqual([]);
    await close(server);
  });

  it.each(['169.254.169.254', '[fd00:ec2::254]', '10.0.0.1'])('refuses the literal address %s without connecting', async (host) => {
    const outcome = await postDelivery(
      new URL(`http://${host}/latest/meta-data/`),
      '{}',
      {},
      { policy: { allowLoopback: true }, timeoutMs: 2_000 },
    );

    expect(outcome).toEqual({ status: null, error: 'the receiver resolves to a refused address' });
  });

  it('does not follow a redirect: the 302 is the answer', async () => {
    const { server, port, hits } = await listen(302);

    const outcome = await postDelivery(
      new URL(`http://127.0.0.1:${port}/hook`),
      '{}',
      {},
      { policy: { allowLoopback: true }, timeoutMs: 2_000 },
    );

    expect(outcome).toEqual({ status: 302, error: null });
    expect(hits).toEqual(['/hook']);
    await close(server);
  });

  it('gives up on a receiver that does not answer within the timeout', async () => {
    const { server, port } = await listen(200, 5_000);

    const outcome = await postDelivery(
      new URL(`http://127.0.0.1:${port}/hook`),
      '{}',
      {},
      { policy: { allowLoopback: true }, timeoutMs: 200 },
    );

    expect(outcome).toEqual({ status: null, error: 'no answer within 0.2 s' });
    server.closeAllConnections();
    await close(server);
  });
});
