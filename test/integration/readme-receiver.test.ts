import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '../../infra/local/ports';
import { repositoryRoot } from '../../infra/local/runtime';
import { eventually } from '../support/receiver';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

/** The receiver exactly as docs/api.md shows it (the only `js` block there), on a free port instead of 4000. */
async function readmeReceiver(port: number): Promise<string> {
  const readme = await readFile(join(repositoryRoot, 'docs/api.md'), 'utf8');
  const code = /```js\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!code) throw new Error('docs/api.md has no js block');
  return code.replace('.listen(4000,', `.listen(${port},`);
}

describe('the documented 20-line receiver', () => {
  it('verifies and prints pending → provisioning → active for a new server, with no polling', async () => {
    const { apiKey } = await runtime.newAccount();
    const port = await freePort();
    // Beside node_modules, so that it finds `standardwebhooks` as a reader's project would.
    const dir = join(repositoryRoot, '.local', `receiver-${randomBytes(4).toString('hex')}`);
    await mkdir(dir, { recursive: true });
    const file = join(dir, 'receiver.mjs');
    await writeFile(file, await readmeReceiver(port));
    const hook = await runtime.call('POST', '/api/v1/webhooks', {
      apiKey,
      body: { url: `http://127.0.0.1:${port}/hooks`, events: ['instance.status_changed'] },
    });
    const receiver = spawn(process.execPath, [file], { env: { ...process.env, WEBHOOK_SECRET: hook.body.secret } });
    let printed = '';
    receiver.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    await eventually(
      async () =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => true,
          () => false,
        ),
      'the receiver to listen',
    );

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'readme', flavor: 's-1vcpu-2gb' } });
    await eventually(() => printed.includes('active'), 'the active event');
    receiver.kill();
    await rm(dir, { recursive: true, force: true });

    const id = created.body.instance_id;
    expect(printed.trim().split('\n').sort()).toEqual(
      [`instance.status_changed ${id} pending provisioning`, `instance.status_changed ${id} provisioning active`].sort(),
    );
  });
});
