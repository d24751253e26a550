import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../infra/local/ports';
import { startSimulator, type Simulator } from '../../infra/local/simulator';
import { DigitalOceanDriver } from '../../shared/upstream/digitalocean';
import { UpstreamPermanentError, UpstreamTransientError, type CreateServerRequest } from '../../shared/upstream/driver';

/**
 * The driver and the simulator, each checked against DigitalOcean's own OpenAPI description with Prism: the driver's
 * requests must be accepted by a Prism mock and its parsing must accept the contract's examples; the simulator's answers
 * must pass through a Prism validating proxy. Prism reports every request or response violation in `sl-violations`.
 */
const CONTRACT = fileURLToPath(new URL('../fixtures/digitalocean-v2-droplets.openapi.json', import.meta.url));
const PRISM = fileURLToPath(new URL('../../node_modules/.bin/prism', import.meta.url));
const TOKEN = 'dop_v1_contract_token_0123456789';
const BOOT_MS = 300;
const ACTION_MS = 150;

interface Prism {
  readonly url: string;
  stop(): Promise<void>;
}

async function startPrism(args: readonly string[]): Promise<Prism> {
  const port = await freePort();
  const child = spawn(process.execPath, [PRISM, ...args, '-h', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(timer);
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  while (!(await answers(url))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`prism ${args[0]} did not start: ${output}`);
    }
    await sleep(100);
  }
  return { url, stop };
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** A fetch that notes every violation Prism reports, and can add headers (Prism's `Prefer`) to each call. */
function checkedFetch(violations: string[], extraHeaders: Record<string, string> = {}): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(extraHeaders)) headers.set(name, value);
    const response = await fetch(input, { ...init, headers });
    const reported = response.headers.get('sl-violations');
    if (reported) violations.push(`${init?.method ?? 'GET'} ${String(input)} -> ${response.status}: ${reported}`);
    return response;
  };
}

const serverRequest = (tag: string): CreateServerRequest => ({
  name: `vps-${tag}`,
  tags: [tag],
  size: 's-2vcpu-4gb',
  image: 'ubuntu-24-04-x64',
  userData: '#cloud-config\n',
});

const violations: string[] = [];

afterEach(() => {
  expect(violations.splice(0)).toEqual([]);
});

describe('DigitalOceanDriver against the DigitalOcean contract (Prism mock)', () => {
  let mock: Prism;
  const driver = (prefer?: string) =>
    new DigitalOceanDriver({
      baseUrl: mock.url,
      token: TOKEN,
      timeoutMs: 5_000,
      fetchImpl: checkedFetch(violations, prefer ? { prefer } : {}),
    });

  beforeAll(async () => {
    mock = await startPrism(['mock', CONTRACT]);
  });

  afterAll(async () => {
    await mock?.stop();
  });

  it('lists droplets by tag and reads their public addresses', async () => {
    const servers = await driver().listServersByTag('instance-1');
    expect(servers.length).toBeGreaterThan(0);
    expect(servers[0]).toMatchObject({ id: 3164444, status: 'active', ipv4: '192.241.165.154' });
    expect(servers[0]).toMatchObject({ sizeSlug: 's-1vcpu-1gb', diskGb: 25 });
  });

  it('creates a droplet with a request the contract accepts', async () => {
    const created = await driver().createServer(serverRequest('instance-1'));
    expect(created).toMatchObject({ id: 3164444, status: 'new', ipv4: null });
  });

  it('reads a droplet, and null for a droplet the upstream does not know', async () => {
    expect(await driver().getServer(3164444)).toMatchObject({ id: 3164444, status: 'active', ipv4: '192.241.165.154' });
    expect(await driver('code=404').getServer(3164444)).toBeNull();
  });

  it('deletes a droplet, and treats a 404 as done', async () => {
    await expect(driver().deleteServer(3164444)).resolves.toBeUndefined();
    await expect(driver('code=404').deleteServer(3164444)).resolves.toBeUndefined();
  });

  it('starts power_off and resize actions with requests the contract accepts, and reads actions', async () => {
    const poweringOff = await driver().startAction(3164444, { type: 'power_off' });
    const resizing = await driver().startAction(3164444, { type: 'resize', size: 's-2vcpu-4gb', disk: true });
    const read = await driver().getAction(poweringOff.id);
    for (const action of [poweringOff, resizing, read]) {
      expect(action).toEqual({
        id: expect.any(Number),
        type: expect.any(String),
        status: expect.stringMatching(/^(in-progress|completed|errored)$/),
      });
    }
  });

  it("lists a droplet's actions with when each started", async () => {
    const actions = await driver().listActions(3164444);
    expect(actions.length).toBeGreaterThan(0);
    expect(actions[0]).toEqual({
      id: expect.any(Number),
      type: expect.any(String),
      status: expect.any(String),
      startedAt: expect.any(String),
    });
  });

  it("maps the contract's declared error answers", async () => {
    const transient = { name: 'UpstreamTransientError' };
    await expect(driver('code=429').getServer(1)).rejects.toMatchObject({ ...transient, status: 429 });
    await expect(driver('code=500').listServersByTag('t')).rejects.toMatchObject({ ...transient, status: 500 });
    await expect(driver('code=401').getAction(1)).rejects.toMatchObject({ name: 'UpstreamPermanentError', status: 401 });
  });
});

describe('simulator against the DigitalOcean contract (Prism validating proxy)', () => {
  let simulator: Simulator;
  let proxy: Prism;
  const driver = (options: { token?: string; perPage?: number } = {}) =>
    new DigitalOceanDriver({
      baseUrl: proxy.url,
      token: TOKEN,
      timeoutMs: 5_000,
      fetchImpl: checkedFetch(violations),
      ...options,
    });

  beforeAll(async () => {
    simulator = await startSimulator({ token: TOKEN, bootMs: BOOT_MS, actionMs: ACTION_MS });
    proxy = await startPrism(['proxy', CONTRACT, simulator.url, '--errors']);
  });

  afterAll(async () => {
    await proxy?.stop();
    await simulator?.close();
  });

  beforeEach(async () => {
    await simulator.control.reset();
  });

  it('answers creates, reads and paged tag listings within the contract', async () => {
    await simulator.control.config({ boot_ms: 60_000 });
    const created = [];
    for (let i = 0; i < 3; i++) created.push(await driver().createServer(serverRequest('instance-1')));
    expect(await driver({ perPage: 2 }).listServersByTag('instance-1')).toHaveLength(3);
    expect(await driver().getServer(created[0]!.id)).toMatchObject({ status: 'new', ipv4: null });
  });

  it('answers booted droplets and actions, in progress and completed, within the contract', async () => {
    const server = await driver().createServer(serverRequest('instance-1'));
    await sleep(BOOT_MS + 20);
    expect(await driver().getServer(server.id)).toMatchObject({ status: 'active', ipv4: expect.any(String) });
    const poweringOff = await driver().startAction(server.id, { type: 'power_off' });
    expect(poweringOff.status).toBe('in-progress');
    await sleep(ACTION_MS + 20);
    expect((await driver().getAction(poweringOff.id)).status).toBe('completed');
    await driver().startAction(server.id, { type: 'resize', size: 's-4vcpu-8gb', disk: true });
    await sleep(ACTION_MS + 20);
    expect(await driver().getServer(server.id)).toMatchObject({ status: 'off', sizeSlug: 's-4vcpu-8gb', diskGb: 80 });
    const listed = await driver({ perPage: 1 }).listActions(server.id);
    expect(listed.map((action) => [action.type, action.status])).toEqual([
      ['resize', 'completed'],
      ['power_off', 'completed'],
      ['create', 'completed'],
    ]);
  });

  it('answers deletes within the contract', async () => {
    const server = await driver().createServer(serverRequest('instance-1'));
    await driver().deleteServer(server.id);
    await driver().deleteServer(server.id);
    await driver().createServer(serverRequest('instance-2'));
    const deleteByTag = await checkedFetch(violations)(`${proxy.url}/v2/droplets?tag_name=instance-2`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(deleteByTag.status).toBe(204);
    expect(simulator.state().droplets).toEqual([]);
  });

  it('answers sizes within the contract', async () => {
    const response = await checkedFetch(violations)(`${proxy.url}/v2/sizes?per_page=200`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(200);
    const { sizes } = (await response.json()) as { sizes: { slug: string }[] };
    expect(sizes.map((size) => size.slug)).toContain('s-16vcpu-32gb');
  });

  it('answers refusals with error bodies within the contract', async () => {
    expect(await driver().getServer(123_456)).toBeNull();
    const running = await driver().createServer(serverRequest('instance-1'));
    await sleep(BOOT_MS + 20);
    const resize = driver().startAction(running.id, { type: 'resize', size: 's-4vcpu-8gb', disk: true });
    await expect(resize).rejects.toBeInstanceOf(UpstreamPermanentError);
    await expect(driver({ token: 'dop_v1_wrong' }).getServer(running.id)).rejects.toMatchObject({ status: 401 });
    await simulator.control.faults({ fail_creates: true });
    await expect(driver().createServer(serverRequest('instance-1'))).rejects.toMatchObject({ status: 422 });
    for (const status of [500, 429]) {
      await simulator.control.faults({ fail_next: 1, status });
      await expect(driver().getServer(running.id)).rejects.toBeInstanceOf(UpstreamTransientError);
    }
  });
});
