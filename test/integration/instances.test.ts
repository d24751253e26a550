import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { upstreamTagOf } from '../../shared/domain/instances';
import { setCapacityLimit } from '../../shared/store/counters';
import { ED25519_FINGERPRINT, ED25519_PUBLIC_KEY } from '../fixtures/ssh-keys';
import { capacityUsed } from '../support/capacity';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const droplets = (tag: string) => runtime.simulator.state().droplets.filter((d) => d.tags.includes(tag));

describe('POST /api/v1/instances', () => {
  it('answers 202 pending with credentials, then provisions the server until it is active', async () => {
    const { apiKey } = await runtime.newAccount();

    const created = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'web', flavor: 's-2vcpu-4gb' },
    });

    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({
      status: 'pending',
      root_user: 'root',
      ssh_port: runtime.simulator.sshPort,
      project_name: 'web',
      ipv4: null,
      activated_at: null,
      plan: { flavor: 's-2vcpu-4gb', vcpu: 2, ram_mb: 4096, disk_gb: 40, hourly_price: 0.03571 },
    });
    expect(created.body.root_password).toMatch(/^[0-9A-Za-z]{24}$/);
    expect(created.body.domain).toContain(String(created.body.instance_id));
    expect(created.body.ssh_key.public_key).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5/);
    expect(created.body.ssh_key.private_key).toContain('-----BEGIN OPENSSH PRIVATE KEY-----');
    expect(created.body.ssh_key.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);

    const active = await runtime.waitForStatus(apiKey, created.body.instance_id, ['active', 'failed']);
    expect(active.status).toBe('active');
    expect(active.ipv4).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(active.activated_at).toEqual(expect.any(String));
    expect(active.vps_id).not.toBe('');
    expect(droplets(upstreamTagOf(runtime.deps, created.body.instance_id))).toHaveLength(1);
  });

  it('keeps a supplied public key, fingerprinted as ssh-keygen does, and returns no private key', async () => {
    const { apiKey } = await runtime.newAccount();

    const created = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'own-key', flavor: 's-1vcpu-2gb', ssh_public_key: ED25519_PUBLIC_KEY },
    });

    expect(created.status).toBe(202);
    expect(created.body.ssh_key).toEqual({
      name: 'own-key-key',
      fingerprint: ED25519_FINGERPRINT,
      public_key: ED25519_PUBLIC_KEY,
      private_key: null,
    });
  });

  it('generates a key pair that OpenSSH itself accepts', async (context) => {
    const { apiKey } = await runtime.newAccount();
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'k', flavor: 's-1vcpu-2gb' } });
    const keyFile = join(mkdtempSync(join(tmpdir(), 'key-')), 'id_ed25519');
    writeFileSync(keyFile, created.body.ssh_key.private_key, { mode: 0o600 });
    let derived: string;
    try {
      derived = execFileSync('ssh-keygen', ['-y', '-f', keyFile]).toString();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return context.skip('ssh-keygen is not installed');
      throw error;
    }
    expect(created.body.ssh_key.public_key.startsWith(derived.trim().split(' ').slice(0, 2).join(' '))).toBe(true);
  });

  it.each([
    { balance: 'exactly $3.00', depositUsd: '3', status: 402 },
    { balance: '$3.01', depositUsd: '3.01', status: 202 },
  ])('answers $status for a balance of $balance', async ({ depositUsd, status }) => {
    const { apiKey } = await runtime.newAccount({ depositUsd });

    const response = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p', flavor: 's-1vcpu-2gb' } });

    expect(response.status).toBe(status);
    if (status === 402) expect(response.body.error).toMatch(/^Insufficient balance/);
  });

  it('fails the instance, destroys the upstream server and releases capacity when creation is refused for good', async () => {
    const { apiKey } = await runtime.newAccount();
    // Lifecycles of earlier tests (a delete still releasing its address) end before the pools are counted.
    await runtime.stepFunctions.idle();
    const ipv4Before = await capacityUsed(runtime.deps, 'capacity#ipv4');
    const tierBefore = await capacityUsed(runtime.deps, 'capacity#tier#s-4vcpu-8gb');
    // The refusal comes a moment late, so the reservation is seen before the failure gives it back.
    await runtime.simulator.control.faults({ fail_creates: true, latency_ms: 1_000, latency_match: 'POST /v2/droplets' });

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'doomed', flavor: 's-4vcpu-8gb' } });
    expect(created.status).toBe(202);
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-4vcpu-8gb')).toBe(tierBefore + 1);
    const failed = await runtime.waitForStatus(apiKey, created.body.instance_id, ['failed', 'active']);
    await runtime.simulator.control.faults({ fail_creates: false, latency_ms: 0 });

    expect(failed.status).toBe('failed');
    expect(failed.failure).toEqual({ code: 'upstream_error', message: 'The upstream refused to create the server' });
    expect(droplets(upstreamTagOf(runtime.deps, created.body.instance_id))).toHaveLength(0);
    await runtime.stepFunctions.idle();
    expect(await capacityUsed(runtime.deps, 'capacity#ipv4')).toBe(ipv4Before);
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-4vcpu-8gb')).toBe(tierBefore);
  });

  it('retries a burst of transient upstream errors and still provisions', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.simulator.control.faults({ fail_next: 3, status: 503, match: 'POST /v2/droplets' });

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'flaky', flavor: 's-2vcpu-2gb' } });
    const settled = await runtime.waitForStatus(apiKey, created.body.instance_id, ['active', 'failed']);

    expect(settled.status).toBe('active');
    expect(droplets(upstreamTagOf(runtime.deps, created.body.instance_id))).toHaveLength(1);
  });

  it.each([
    ['tier', { kind: 'tier', flavor: 's-16vcpu-32gb' } as const, 'Tier capacity exhausted'],
    ['IPv4', { kind: 'ipv4' } as const, 'IPv4 capacity exhausted'],
  ])('answers 503 when the %s pool is full, and records nothing', async (_, pool, text) => {
    const { apiKey } = await runtime.newAccount();
    await setCapacityLimit(runtime.deps, pool, 0);
    try {
      const response = await runtime.call('POST', '/api/v1/instances', {
        apiKey,
        body: { project_name: 'big', flavor: 's-16vcpu-32gb' },
      });

      expect(response.status).toBe(503);
      expect(response.body.error).toBe(text);
      expect((await runtime.call('GET', '/api/v1/instances', { apiKey })).body).toEqual([]);
    } finally {
      await setCapacityLimit(runtime.deps, pool, 1000);
    }
  });
});

describe('GET /api/v1/instances', () => {
  it("lists only the caller's instances, in summary form", async () => {
    const mine = await runtime.newAccount();
    const theirs = await runtime.newAccount();
    const a = await runtime.call('POST', '/api/v1/instances', { apiKey: mine.apiKey, body: { project_name: 'a', flavor: 's-1vcpu-2gb' } });
    const b = await runtime.call('POST', '/api/v1/instances', { apiKey: mine.apiKey, body: { project_name: 'b', flavor: 's-1vcpu-2gb' } });
    await runtime.call('POST', '/api/v1/instances', { apiKey: theirs.apiKey, body: { project_name: 'c', flavor: 's-1vcpu-2gb' } });

    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey: mine.apiKey });

    expect(listed.status).toBe(200);
    expect(listed.body.map((i: { instance_id: number }) => i.instance_id)).toEqual([a.body.instance_id, b.body.instance_id]);
    for (const summary of listed.body) {
      expect(Object.keys(summary).sort()).toEqual(
        [
          'created_at',
          'custom_domain',
          'domain',
          'instance_id',
          'ipv4',
          'labels',
          'plan',
          'project_name',
          'root_password',
          'root_user',
          'ssh_port',
          'status',
          'vps_id',
        ].sort(),
      );
    }
  });
});

describe('GET /api/v1/instances/{instance_id}', () => {
  it('returns 404 when the instance belongs to another account', async () => {
    const owner = await runtime.newAccount();
    const stranger = await runtime.newAccount();
    const created = await runtime.call('POST', '/api/v1/instances', {
      apiKey: owner.apiKey,
      body: { project_name: 'x', flavor: 's-1vcpu-2gb' },
    });

    const response = await runtime.call('GET', `/api/v1/instances/${created.body.instance_id}`, { apiKey: stranger.apiKey });

    expect(response.status).toBe(404);
    expect(response.body.error).toBe('Instance not found');
  });

  it.each(['999999999', 'abc', '0', '-1', '1.5'])('returns 404 for instance id %s', async (id) => {
    const { apiKey } = await runtime.newAccount();

    const response = await runtime.call('GET', `/api/v1/instances/${id}`, { apiKey });

    expect(response.status).toBe(404);
    expect(response.body.error).toBe('Instance not found');
  });
});

describe('GET /api/v1/openapi.json', () => {
  it('serves the OpenAPI document without authentication', async () => {
    const response = await runtime.call('GET', '/api/v1/openapi.json');

    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ openapi: '3.1.0', info: { version: '1.0.0' } });
  });
});
