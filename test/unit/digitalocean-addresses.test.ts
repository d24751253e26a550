import { DigitalOceanDriver } from '../../shared/upstream/digitalocean';
import { UpstreamTransientError } from '../../shared/upstream/driver';

/** A driver whose upstream answers one active droplet with this public address. */
function upstreamAnswering(ipAddress: string) {
  const droplet = {
    id: 7,
    name: 'web',
    status: 'active',
    disk: 50,
    size_slug: 's-1vcpu-2gb',
    tags: ['svc'],
    networks: { v4: [{ ip_address: ipAddress, type: 'public' }] },
  };
  return new DigitalOceanDriver({
    baseUrl: 'http://127.0.0.1:9',
    token: 'token-a',
    timeoutMs: 1_000,
    fetchImpl: (async () => Response.json({ droplet })) as typeof fetch,
  });
}

describe('DigitalOceanDriver server addresses', () => {
  it('reads a public address given as an IPv4 address', async () => {
    const server = await upstreamAnswering('203.0.113.7').getServer(7);

    expect(server?.ipv4).toBe('203.0.113.7');
  });

  it.each([
    ['an ssh option', '-oProxyCommand=touch /tmp/owned'],
    ['a host name', 'metadata.internal'],
    ['an address and a command', '203.0.113.7; reboot'],
    ['a short form', '127.1'],
    ['written with leading zeros', '203.000.113.7'],
    ['out of range', '203.0.113.256'],
    ['a user and host', 'root@203.0.113.7'],
  ])('refuses a droplet whose public address is %s as a malformed answer', async (_, ipAddress) => {
    const refusal = await upstreamAnswering(ipAddress)
      .getServer(7)
      .then(
        () => undefined,
        (error: unknown) => error,
      );

    expect(refusal).toBeInstanceOf(UpstreamTransientError);
    expect((refusal as Error).message).toMatch(
      /^DigitalOcean GET \/v2\/droplets\/7 answered 200 with an unexpected body \(droplet\.networks\.v4\.0\.ip_address: /,
    );
  });
});
