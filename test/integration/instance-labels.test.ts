import { randomBytes } from 'node:crypto';
import type { ServiceEvent } from '../../shared/schemas/events';
import { upstreamTagOf } from '../../shared/domain/instances';
import { useTestRuntime } from '../support/runtime';
import { everythingStored } from '../support/stored';

const runtime = useTestRuntime();
const events: ServiceEvent[] = [];
beforeAll(() => runtime.events.subscribe(async (event) => void events.push(event)));

async function create(apiKey: string, body: Record<string, unknown>) {
  const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { flavor: 's-1vcpu-2gb', ...body } });
  expect(created.status).toBe(202);
  return created.body;
}

const ids = (body: { instance_id: number }[]) => body.map((instance) => instance.instance_id);

describe('labels and list filters', () => {
  it('returns labels in the detail and summary forms and sends them upstream as tags', async () => {
    const { apiKey } = await runtime.newAccount();

    const created = await create(apiKey, { project_name: 'web', labels: { env: 'prod', 'example.com/tier': 'web' } });
    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey });
    const active = await runtime.waitForStatus(apiKey, created.instance_id, ['active', 'failed']);
    const [droplet] = runtime.simulator.state().droplets.filter((d) => d.tags.includes(upstreamTagOf(runtime.deps, created.instance_id)));

    expect(created.labels).toEqual({ env: 'prod', 'example.com/tier': 'web' });
    expect(listed.body[0].labels).toEqual({ env: 'prod', 'example.com/tier': 'web' });
    expect(active.labels).toEqual({ env: 'prod', 'example.com/tier': 'web' });
    // `example.com/tier` does not fit DigitalOcean's tag syntax: only `env` goes upstream.
    expect(droplet?.tags).toContain('label:env:prod');
    expect(droplet?.tags.filter((tag) => tag.startsWith('label:'))).toEqual(['label:env:prod']);
  });

  it.each([
    ['a key with a space', { 'bad key': 'x' }, 'labels: invalid key "bad key"'],
    ['a value with a slash', { env: 'a/b' }, 'labels: invalid value for "env"'],
    ['33 labels', Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])), 'labels: at most 32 labels'],
  ])('refuses %s with 400', async (_, labels, text) => {
    const { apiKey } = await runtime.newAccount();

    const refused = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'x', flavor: 's-1vcpu-2gb', labels } });

    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain(text);
  });

  it('filters by each selector form, status and name, combined with paging', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '100' });
    const prodWeb = await create(apiKey, { project_name: 'a', labels: { env: 'prod', tier: 'web' } });
    const prodDb = await create(apiKey, { project_name: 'b', labels: { env: 'prod', tier: 'db' } });
    const dev = await create(apiKey, { project_name: 'a', labels: { env: 'dev' } });
    const bare = await create(apiKey, { project_name: 'c' });
    const list = async (query: string) => {
      const answer = await runtime.call('GET', `/api/v1/instances?${query}`, { apiKey });
      expect(answer.status).toBe(200);
      return ids(answer.body);
    };

    expect(await list('label_selector=env%3Dprod')).toEqual([prodWeb.instance_id, prodDb.instance_id]);
    expect(await list('label_selector=env%3D%3Dprod,tier!%3Ddb')).toEqual([prodWeb.instance_id]);
    expect(await list('label_selector=tier!%3Ddb')).toEqual([prodWeb.instance_id, dev.instance_id, bare.instance_id]);
    expect(await list('label_selector=tier')).toEqual([prodWeb.instance_id, prodDb.instance_id]);
    expect(await list('label_selector=!env')).toEqual([bare.instance_id]);
    expect(await list('name=a')).toEqual([prodWeb.instance_id, dev.instance_id]);
    expect(await list('name=a&label_selector=env%3Ddev')).toEqual([dev.instance_id]);
    expect(await list('status=pending,provisioning,active')).toHaveLength(4);
    expect(await list('status=stopped')).toEqual([]);

    const pages: number[][] = [];
    const links: string[] = [];
    let path: string | undefined = '/api/v1/instances?per_page=1&label_selector=env%3Dprod';
    while (path !== undefined && pages.length < 10) {
      const page = await runtime.call('GET', path, { apiKey });
      pages.push(ids(page.body));
      path = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1];
      if (path) links.push(path);
    }
    expect(pages.flat()).toEqual([prodWeb.instance_id, prodDb.instance_id]);
    expect(pages.every((page) => page.length <= 1)).toBe(true);
    expect(links.every((link) => link.includes('label_selector=env%3Dprod'))).toBe(true);
  });

  it.each([
    ['stauts=active', 'Unknown query parameter: stauts'],
    ['status=sleeping', 'status must be one or more of'],
    ['label_selector=env%3D%3D%3Dx', 'label_selector must be comma-separated requirements'],
  ])('answers 400 for %s', async (query, text) => {
    const { apiKey } = await runtime.newAccount();

    const refused = await runtime.call('GET', `/api/v1/instances?${query}`, { apiKey });

    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain(text);
  });
});

describe('PATCH /api/v1/instances/{instance_id}', () => {
  it('renames and relabels with merge-patch semantics and publishes instance.updated', async () => {
    const { apiKey } = await runtime.newAccount();
    const created = await create(apiKey, { project_name: 'old', labels: { env: 'dev', team: 'a' } });

    const patched = await runtime.call('PATCH', `/api/v1/instances/${created.instance_id}`, {
      apiKey,
      body: { project_name: 'new', labels: { env: 'prod', team: null, tier: 'web' } },
    });
    const read = await runtime.call('GET', `/api/v1/instances/${created.instance_id}`, { apiKey });
    const updated = await runtime.waitFor('instance.updated', async () =>
      events.find((event) => event.type === 'instance.updated' && event.instance_id === created.instance_id),
    );

    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ instance_id: created.instance_id, project_name: 'new', labels: { env: 'prod', tier: 'web' } });
    expect(patched.body.root_password).toBe(created.root_password);
    expect(read.body).toMatchObject({ project_name: 'new', labels: { env: 'prod', tier: 'web' } });
    expect(updated.data).toEqual({ project_name: 'new', labels: { env: 'prod', tier: 'web' } });
  });

  it('returns 404 when the instance belongs to another account, and changes nothing', async () => {
    const owner = await runtime.newAccount();
    const other = await runtime.newAccount();
    const created = await create(owner.apiKey, { project_name: 'mine' });

    const refused = await runtime.call('PATCH', `/api/v1/instances/${created.instance_id}`, {
      apiKey: other.apiKey,
      body: { project_name: 'theirs' },
    });
    const read = await runtime.call('GET', `/api/v1/instances/${created.instance_id}`, { apiKey: owner.apiKey });

    expect(refused.status).toBe(404);
    expect(read.body.project_name).toBe('mine');
  });

  it('answers 400 for an empty patch', async () => {
    const { apiKey } = await runtime.newAccount();
    const created = await create(apiKey, { project_name: 'p' });

    const refused = await runtime.call('PATCH', `/api/v1/instances/${created.instance_id}`, { apiKey, body: {} });

    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('Give project_name or labels to change');
  });
});

describe('user_data', () => {
  it('reaches the server and appears in no response, event or table in clear', async () => {
    const { apiKey } = await runtime.newAccount();
    const token = `tok${randomBytes(12).toString('hex')}`;
    const userData = `#cloud-config\nwrite_files:\n  - path: /etc/app-token\n    content: ${token}\n`;

    const answer = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'ud', flavor: 's-1vcpu-2gb', user_data: userData },
      headers: { 'idempotency-key': `ud-${randomBytes(8).toString('hex')}` },
    });
    const created = answer.body;
    const active = await runtime.waitForStatus(apiKey, created.instance_id, ['active', 'failed']);
    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey });
    await runtime.stepFunctions.idle();
    const [droplet] = runtime.simulator.state().droplets.filter((d) => d.tags.includes(upstreamTagOf(runtime.deps, created.instance_id)));

    expect(active.status).toBe('active');
    // The server gets the service's cloud-config (root's key and password) and the customer's, as two parts.
    expect(droplet?.userData).toContain(userData);
    expect(droplet?.userData).toContain(created.ssh_key.public_key);
    expect(droplet?.userData).toMatch(/^Content-Type: multipart\/mixed; boundary="/);
    for (const seen of [created, active, listed.body, events.filter((event) => event.instance_id === created.instance_id)]) {
      expect(JSON.stringify(seen)).not.toContain(token);
    }
    expect(await everythingStored(runtime)).not.toContain(token);
  });

  it('answers 400 with a clear text when it is larger than 64 KiB', async () => {
    const { apiKey } = await runtime.newAccount();

    const refused = await runtime.call('POST', '/api/v1/instances', {
      apiKey,
      body: { project_name: 'big', flavor: 's-1vcpu-2gb', user_data: `#!/bin/sh\n${'x'.repeat(64 * 1024)}` },
    });

    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('user_data must be at most 65536 bytes (64 KiB) of UTF-8');
  });
});
