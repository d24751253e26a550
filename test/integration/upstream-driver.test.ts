import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../infra/local/ports';
import { startSimulator, type Simulator } from '../../infra/local/simulator';
import { DigitalOceanDriver, type DigitalOceanDriverOptions } from '../../shared/upstream/digitalocean';
import { UpstreamPermanentError, UpstreamTransientError, type CreateServerRequest } from '../../shared/upstream/driver';

const TOKEN = 'dop_v1_simulated_token_0123456789';
const BOOT_MS = 200;
const ACTION_MS = 100;

let simulator: Simulator;
let driver: DigitalOceanDriver;

const driverFor = (options: Partial<DigitalOceanDriverOptions> = {}) =>
  new DigitalOceanDriver({ baseUrl: simulator.url, token: TOKEN, timeoutMs: 2_000, ...options });

const serverRequest = (tag: string, size = 's-2vcpu-4gb'): CreateServerRequest => ({
  name: `vps-${tag}`,
  tags: [tag],
  size,
  image: 'ubuntu-24-04-x64',
  userData: '#cloud-config\n',
});

/** A droplet that has finished booting, so it is `active` and accepts actions. */
async function bootedServer(tag: string) {
  const server = await driver.createServer(serverRequest(tag));
  await sleep(BOOT_MS + 20);
  return server;
}

async function powerOff(id: number) {
  await driver.startAction(id, { type: 'power_off' });
  await sleep(ACTION_MS + 20);
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof Error)) throw new Error('expected the call to fail');
  expect(error.message).not.toContain(TOKEN);
  return error;
}

beforeAll(async () => {
  simulator = await startSimulator({ token: TOKEN, bootMs: BOOT_MS, actionMs: ACTION_MS });
  driver = driverFor();
});

afterAll(async () => {
  await simulator.close();
});

beforeEach(async () => {
  await simulator.control.reset();
});

describe('DigitalOceanDriver against the simulator', () => {
  describe('createServer and getServer', () => {
    it('creates a droplet that is new and has no address yet', async () => {
      await simulator.control.config({ boot_ms: 60_000 });
      const created = await driver.createServer(serverRequest('instance-a'));
      expect(created).toMatchObject({ status: 'new', ipv4: null, sizeSlug: 's-2vcpu-4gb', diskGb: 40 });
      expect(created.tags).toEqual(['instance-a']);
      expect(await driver.getServer(created.id)).toMatchObject({ id: created.id, status: 'new', ipv4: null });
    });

    it('reports the droplet active with its public IPv4 once booted', async () => {
      const created = await bootedServer('instance-a');
      const server = await driver.getServer(created.id);
      expect(server?.status).toBe('active');
      expect(server?.ipv4).toMatch(/^203\.0\.113\.\d+$/);
    });

    it('returns null when the droplet no longer exists', async () => {
      expect(await driver.getServer(123_456)).toBeNull();
    });

    it('sees a droplet that shut down from inside as off', async () => {
      const created = await bootedServer('instance-a');
      await simulator.control.powerOff(created.id);
      expect((await driver.getServer(created.id))?.status).toBe('off');
    });
  });

  describe('listServersByTag', () => {
    it('finds the droplets carrying the tag and no others', async () => {
      const mine = await driver.createServer(serverRequest('instance-a'));
      await driver.createServer(serverRequest('instance-b'));
      const listed = await driver.listServersByTag('instance-a');
      expect(listed.map((server) => server.id)).toEqual([mine.id]);
    });

    it('follows the next-page links until every droplet is listed', async () => {
      const created = [];
      for (let i = 0; i < 5; i++) created.push(await driver.createServer(serverRequest('instance-a')));
      const listed = await driverFor({ perPage: 2 }).listServersByTag('instance-a');
      expect(listed.map((server) => server.id)).toEqual(created.map((server) => server.id));
      expect(simulator.state().calls['GET /v2/droplets']).toBe(3);
    });

    it('gives a fleet sweep every page however many there are, where a whole listing stops at 100 pages', async () => {
      const created = [];
      for (let i = 0; i < 101; i++) created.push(await driver.createServer(serverRequest('fleet')));
      const paged = driverFor({ perPage: 1 });

      const pages = [];
      for await (const page of paged.serverPagesByTag('fleet')) pages.push(page.map((server) => server.id));

      expect(pages).toEqual(created.map((server) => [server.id]));
      await expect(paged.listServersByTag('fleet')).rejects.toThrow('DigitalOcean GET /v2/droplets: more than 100 pages');
    });

    it('sends next-page requests to its own base URL whatever host the link names', async () => {
      const requested: string[] = [];
      const pages = [
        { droplets: [], links: { pages: { next: 'https://elsewhere.example/v2/droplets?page=2&tag_name=t' } } },
        { droplets: [], links: { pages: {} } },
      ];
      const fetchImpl: typeof fetch = async (input) => {
        requested.push(String(input));
        return Response.json(pages[requested.length - 1]);
      };
      await driverFor({ fetchImpl }).listServersByTag('t');
      expect(requested).toEqual([`${simulator.url}/v2/droplets?tag_name=t&per_page=200`, `${simulator.url}/v2/droplets?page=2&tag_name=t`]);
    });
  });

  describe('deleteServer', () => {
    it('destroys the droplet so that it can no longer be read', async () => {
      const created = await driver.createServer(serverRequest('instance-a'));
      await driver.deleteServer(created.id);
      expect(await driver.getServer(created.id)).toBeNull();
      expect(simulator.state().droplets).toEqual([]);
    });

    it('treats deleting an unknown droplet as done', async () => {
      await expect(driver.deleteServer(123_456)).resolves.toBeUndefined();
    });
  });

  describe('actions', () => {
    it('powers a droplet off through an action that completes', async () => {
      const created = await bootedServer('instance-a');
      const action = await driver.startAction(created.id, { type: 'power_off' });
      expect(action).toMatchObject({ type: 'power_off', status: 'in-progress' });
      await sleep(ACTION_MS + 20);
      expect(await driver.getAction(action.id)).toEqual({ id: action.id, type: 'power_off', status: 'completed' });
      expect((await driver.getServer(created.id))?.status).toBe('off');
    });

    it('resizes a powered-off droplet to the new size and disk', async () => {
      const created = await bootedServer('instance-a');
      await powerOff(created.id);
      const action = await driver.startAction(created.id, { type: 'resize', size: 's-4vcpu-8gb', disk: true });
      await sleep(ACTION_MS + 20);
      expect((await driver.getAction(action.id)).status).toBe('completed');
      expect(await driver.getServer(created.id)).toMatchObject({ status: 'off', sizeSlug: 's-4vcpu-8gb', diskGb: 80 });
    });

    it('refuses to resize a running droplet with UpstreamPermanentError', async () => {
      const created = await bootedServer('instance-a');
      const error = await rejection(driver.startAction(created.id, { type: 'resize', size: 's-4vcpu-8gb', disk: true }));
      expect(error).toBeInstanceOf(UpstreamPermanentError);
      expect(error).toMatchObject({ status: 422, message: expect.stringContaining('power it off') });
    });

    it('refuses a resize to a smaller disk with UpstreamPermanentError', async () => {
      const created = await bootedServer('instance-a');
      await powerOff(created.id);
      const error = await rejection(driver.startAction(created.id, { type: 'resize', size: 's-2vcpu-2gb', disk: true }));
      expect(error).toBeInstanceOf(UpstreamPermanentError);
      expect(error.message).toContain('smaller');
    });
  });

  describe('failures', () => {
    it('maps an injected 500 to UpstreamTransientError and then recovers', async () => {
      await simulator.control.faults({ fail_next: 1, status: 500, match: 'POST /v2/droplets' });
      const error = await rejection(driver.createServer(serverRequest('instance-a')));
      expect(error).toBeInstanceOf(UpstreamTransientError);
      expect(error).toMatchObject({ status: 500 });
      await expect(driver.createServer(serverRequest('instance-a'))).resolves.toMatchObject({ status: 'new' });
    });

    it('maps an injected 429 to UpstreamTransientError', async () => {
      await simulator.control.faults({ fail_next: 1, status: 429 });
      const error = await rejection(driver.listServersByTag('instance-a'));
      expect(error).toBeInstanceOf(UpstreamTransientError);
      expect(error).toMatchObject({ status: 429 });
    });

    it('answers injected 429s with Retry-After, as DigitalOcean does', async () => {
      await simulator.control.faults({ fail_next: 1, status: 429 });
      const response = await fetch(`${simulator.url}/v2/sizes`);
      expect(response.status).toBe(429);
      expect(response.headers.get('retry-after')).toBe('1');
    });

    it('maps refused creates to UpstreamPermanentError until they are allowed again', async () => {
      await simulator.control.faults({ fail_creates: true });
      const error = await rejection(driver.createServer(serverRequest('instance-a')));
      expect(error).toBeInstanceOf(UpstreamPermanentError);
      expect(error).toMatchObject({ status: 422 });
      await simulator.control.faults({ fail_creates: false });
      await expect(driver.createServer(serverRequest('instance-a'))).resolves.toMatchObject({ status: 'new' });
    });

    it('refuses an unavailable size with UpstreamCapacityError, a permanent refusal', async () => {
      const error = await rejection(driver.createServer(serverRequest('instance-a', 's-1vcpu-1gb')));
      expect(error).toBeInstanceOf(UpstreamPermanentError);
      expect(error).toMatchObject({ name: 'UpstreamCapacityError', status: 422 });
    });

    it('maps latency beyond the timeout to UpstreamTransientError', async () => {
      await simulator.control.faults({ latency_ms: 500 });
      const error = await rejection(driverFor({ timeoutMs: 100 }).getServer(1));
      expect(error).toBeInstanceOf(UpstreamTransientError);
      expect(error.message).toContain('timed out');
    });

    it('maps an unreachable upstream to UpstreamTransientError', async () => {
      const error = await rejection(driverFor({ baseUrl: `http://127.0.0.1:${await freePort()}` }).getServer(1));
      expect(error).toBeInstanceOf(UpstreamTransientError);
      expect(error.message).toContain('network error');
    });

    it('maps a wrong token to UpstreamPermanentError 401', async () => {
      const error = await rejection(driverFor({ token: 'dop_v1_wrong' }).listServersByTag('instance-a'));
      expect(error).toBeInstanceOf(UpstreamPermanentError);
      expect(error).toMatchObject({ status: 401 });
    });

    it('maps a malformed answer to UpstreamTransientError', async () => {
      const fetchImpl: typeof fetch = async () => Response.json({ droplet: { id: 'seven' } });
      const error = await rejection(driverFor({ fetchImpl }).getServer(7));
      expect(error).toBeInstanceOf(UpstreamTransientError);
      expect(error.message).toContain('unexpected body');
    });

    it('keeps the token out of messages even when the upstream echoes it', async () => {
      const echo = { id: 'forbidden', message: `bad token ${TOKEN}` };
      const fetchImpl: typeof fetch = async () => Response.json(echo, { status: 403 });
      const error = await rejection(driverFor({ fetchImpl }).getServer(7));
      expect(error).toBeInstanceOf(UpstreamPermanentError);
      expect(error).toMatchObject({ status: 403, message: expect.stringContaining('[redacted]') });
    });
  });

  describe('token re-read on 401', () => {
    it('re-reads a refused token and sends the call again with the new one', async () => {
      const stale = 'dop_v1_replaced_by_the_operator';
      const rereadToken = vi.fn(async () => TOKEN);
      const rotated = driverFor({ token: stale, rereadToken });
      await driver.createServer(serverRequest('instance-a'));

      const servers = await rotated.listServersByTag('instance-a');

      expect(servers.map((server) => server.tags)).toEqual([['instance-a']]);
      expect(rereadToken).toHaveBeenCalledExactlyOnceWith(stale);
      expect(simulator.state().calls['GET /v2/droplets']).toBe(2);
      // The driver keeps the new token: the next call is sent once.
      await rotated.listServersByTag('instance-a');
      expect(simulator.state().calls['GET /v2/droplets']).toBe(3);
    });

    it('gives up with the 401 when the re-read finds the same token', async () => {
      const rereadToken = vi.fn(async (stale: string) => stale);

      const error = await rejection(driverFor({ token: 'dop_v1_revoked', rereadToken }).listServersByTag('instance-a'));

      expect(error).toBeInstanceOf(UpstreamPermanentError);
      expect(error).toMatchObject({ status: 401, message: 'DigitalOcean GET /v2/droplets answered 401: Unable to authenticate you.' });
      expect(simulator.state().calls['GET /v2/droplets']).toBe(1);
    });

    it('re-sends a create refused with 401 once, creating exactly one server', async () => {
      const rotated = driverFor({ token: 'dop_v1_old', rereadToken: async () => TOKEN });

      await rotated.createServer(serverRequest('instance-b'));

      expect(simulator.state().droplets.filter((droplet) => droplet.tags.includes('instance-b'))).toHaveLength(1);
      expect(simulator.state().calls['POST /v2/droplets']).toBe(2);
    });
  });
});
