import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repositoryRoot } from '../../infra/local/runtime';
import { freePort } from '../../infra/local/ports';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();
const example = resolve(repositoryRoot, 'examples/webhook-receiver.mjs');

describe('examples/webhook-receiver.mjs', () => {
  it('is the receiver docs/api.md shows, word for word', () => {
    expect(readFileSync(resolve(repositoryRoot, 'docs/api.md'), 'utf8')).toContain(`\`\`\`js\n${readFileSync(example, 'utf8')}\`\`\``);
  });

  it("prints an instance's status changes and its jobs' events, the jobs' included after the instance's", { timeout: 60_000 }, async () => {
    const { apiKey } = await runtime.newAccount();
    const port = await freePort();
    const hook = await runtime.call('POST', '/api/v1/webhooks', {
      apiKey,
      body: { url: `http://127.0.0.1:${port}/hooks`, events: ['instance.status_changed', 'job.succeeded'] },
    });
    const receiver = spawn(process.execPath, [example], {
      cwd: repositoryRoot,
      env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRET: hook.body.secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    onTestFinished(() => void receiver.kill());
    let printed = '';
    receiver.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));

    const active = await runtime.activeInstance(apiKey);
    const reboot = await runtime.call('POST', `/api/v1/instances/${active.instance_id}/actions`, { apiKey, body: { type: 'reboot' } });
    await runtime.waitForJob(apiKey, reboot.body.job_id);
    await runtime.waitFor('the reboot job event', async () => (printed.match(/^job\.succeeded /gm)?.length === 2 ? true : undefined));

    const lines = printed.split('\n').filter(Boolean);
    expect(lines).toContain(`instance.status_changed ${active.instance_id} pending provisioning`);
    expect(lines).toContain(`instance.status_changed ${active.instance_id} provisioning active`);
    // The provision's job and the reboot's: job events carry no sequence, and none is dropped as out of date.
    expect(lines.filter((line) => line === `job.succeeded ${active.instance_id}  `)).toHaveLength(2);
  });
});
