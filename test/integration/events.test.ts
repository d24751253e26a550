import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { inject } from 'vitest';
import { repositoryRoot } from '../../infra/local/runtime';
import type { ServiceEvent } from '../../shared/schemas/events';
import { eventually } from '../support/receiver';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

/** Everything the bus carries from now on, for one instance. */
function collect(): { of(instanceId: number): ServiceEvent[]; stop(): void } {
  const seen: ServiceEvent[] = [];
  const stop = runtime.events.subscribe((event) => void seen.push(event));
  return { of: (instanceId) => seen.filter((event) => event.instance_id === instanceId), stop };
}

const summary = (event: ServiceEvent) =>
  event.type === 'instance.status_changed'
    ? `${event.type} ${event.data.from}→${event.data.to}`
    : event.type === 'job.succeeded' || event.type === 'job.failed'
      ? `${event.type} ${event.data.job_type}`
      : event.type;

describe('events from the change streams', () => {
  it('publishes a whole walk-through (create, power cycle, resize, delete) as exactly the expected events', async () => {
    const bus = collect();
    const { apiKey, accountId } = await runtime.newAccount();

    const active = await runtime.activeInstance(apiKey);
    const id = active.instance_id as number;
    for (const body of [{ type: 'power_off' }, { type: 'power_on' }, { type: 'resize', flavor: 's-2vcpu-4gb' }]) {
      const action = await runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });
      expect((await runtime.waitForJob(apiKey, action.body.job_id)).status).toBe('succeeded');
    }
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${id}`, { apiKey });
    await runtime.waitForJob(apiKey, deleted.body.job_id);
    // The jobs' and the instances' streams are read apart: the end of the delete job and the instance's last change
    // may come in either order.
    await eventually(
      () =>
        bus.of(id).some((event) => event.type === 'job.succeeded' && event.data.job_type === 'delete') &&
        bus.of(id).some((event) => event.type === 'instance.status_changed' && event.data.to === 'destroyed')
          ? true
          : undefined,
      'the delete to end',
    );
    bus.stop();

    const events = bus.of(id);
    const instanceEvents = events.filter((event) => event.type.startsWith('instance.'));
    expect(instanceEvents.map(summary)).toEqual([
      'instance.created',
      'instance.status_changed pending→provisioning',
      'instance.status_changed provisioning→active',
      'instance.status_changed active→stopped',
      'instance.status_changed stopped→active',
      'instance.status_changed active→resizing',
      'instance.status_changed resizing→active',
      'instance.status_changed active→deleting',
      'instance.deleted',
      'instance.status_changed deleting→destroyed',
    ]);
    expect(events.filter((event) => event.type.startsWith('job.')).map(summary)).toEqual([
      'job.succeeded provision',
      'job.succeeded power_off',
      'job.succeeded power_on',
      'job.succeeded resize',
      'job.succeeded delete',
    ]);
    const sequences = instanceEvents.map((event) => event.sequence!);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(events.map((event) => event.id)).size).toBe(events.length);
    expect(events.every((event) => event.account_id === accountId)).toBe(true);
    const resized = instanceEvents.find((event) => event.type === 'instance.status_changed' && event.data.from === 'resizing');
    expect(resized?.type === 'instance.status_changed' && resized.data.plan.flavor).toBe('s-2vcpu-4gb');
  });
});

describe('ops events tail', () => {
  it('prints the events of one account as they are committed, one JSON object per line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'events-tail-'));
    const runtimeFile = join(dir, 'runtime.json');
    await writeFile(
      runtimeFile,
      JSON.stringify({
        dynamodb_endpoint: inject('dynamodbEndpoint'),
        sfn_endpoint: runtime.stepFunctions.endpoint,
        simulator_url: runtime.simulator.url,
        upstream_token: runtime.upstreamToken,
        table_prefix: runtime.tableNames.accounts.replace(/-accounts$/, ''),
        secrets_key_file: runtime.secretsKeyFile,
      }),
    );
    const { apiKey, accountId } = await runtime.newAccount();
    const other = await runtime.newAccount();
    const child = spawn(
      process.execPath,
      [
        resolve(repositoryRoot, 'node_modules/tsx/dist/cli.mjs'),
        'infra/ops/cli.ts',
        'events',
        'tail',
        '--account',
        accountId,
        '--limit',
        '2',
        '--json',
      ],
      { cwd: repositoryRoot, env: { ...process.env, OPS_RUNTIME_FILE: runtimeFile } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.on('close', done));

    await eventually(
      () => stderr.includes('following events') || (stderr.includes('error:') && Promise.reject(new Error(stderr))),
      'the tail to start',
      120_000,
    );
    await runtime.call('POST', '/api/v1/instances', { apiKey: other.apiKey, body: { project_name: 'not-mine', flavor: 's-1vcpu-2gb' } });
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'tailed', flavor: 's-1vcpu-2gb' } });

    expect(await exited).toBe(0);
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.slice(0, -1).map((event) => [event.type, event.account_id, event.instance_id])).toEqual([
      ['instance.created', accountId, created.body.instance_id],
      ['instance.status_changed', accountId, created.body.instance_id],
    ]);
    expect(lines[1].data).toMatchObject({ from: 'pending', to: 'provisioning' });
    expect(lines.at(-1)).toEqual({ events_printed: 2 });
    await rm(dir, { recursive: true, force: true });
    // The CLI starts a TypeScript process of its own: slow on a busy machine.
  }, 180_000);
});
