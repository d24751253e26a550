import { Agent, request } from 'node:http';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

/** A GET over `agent`: its status, and whether it went over a connection an earlier request had opened. */
function get(agent: Agent, path: string): Promise<{ status: number; reusedSocket: boolean }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${runtime.baseUrl}${path}`, { agent }, (incoming) => {
      incoming.resume();
      incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, reusedSocket: outgoing.reusedSocket }));
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

describe('the local gateway', () => {
  it('answers a client that reuses a connection it left idle for 6 s', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await get(agent, '/api/v1/openapi.json');
      // The idle time itself is the subject: longer than Node's default of 5 s.
      await new Promise((resolve) => setTimeout(resolve, 6_000));

      const second = await get(agent, '/api/v1/openapi.json');

      expect([first.status, second.status, second.reusedSocket]).toEqual([200, 200, true]);
    } finally {
      agent.destroy();
    }
  });
});
