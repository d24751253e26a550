import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packSdk } from '../../clients/sdk/pack';
import { useTestRuntime } from '../support/runtime';

/** The SDK as a customer gets it: packed, installed into a project of its own, imported by name, typed. */
const runtime = useTestRuntime();
const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

/** A fresh project with the packed SDK and Node's types installed (from the local npm cache when it has them). */
function projectWithSdk(): string {
  const project = mkdtempSync(join(tmpdir(), 'sdk-user-'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'sdk-user', private: true, type: 'module' }));
  const tarball = packSdk(project);
  execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--silent', tarball, '@types/node@24.19.2'], {
    cwd: project,
    stdio: 'pipe',
  });
  return project;
}

describe('the packed SDK', () => {
  it('installs into a new project, type-checks under nodenext, pages through instances and verifies a webhook', async () => {
    const project = projectWithSdk();
    const { apiKey, accountId } = await runtime.newAccount();
    for (const name of ['one', 'two', 'three'])
      await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: name, flavor: 's-1vcpu-2gb' } });
    writeFileSync(
      join(project, 'use.ts'),
      `import { createVpsClient, verifyWebhook, WebhookVerificationError, type InstanceSummary } from '@vps-service/sdk';
import { Webhook } from 'standardwebhooks';

const vps = createVpsClient({ baseUrl: process.env.BASE_URL!, apiKey: process.env.API_KEY! });
const names: string[] = [];
for await (const instance of vps.instances.list({}, { perPage: 2 })) names.push((instance satisfies InstanceSummary).project_name);
const account = await vps.getAccount();
const secret = 'whsec_' + Buffer.from('a webhook secret of 32 bytes....').toString('base64');
const body = JSON.stringify({ id: 'evt_1', type: 'instance.created', sequence: 1 });
const headers = new Webhook(secret).sign('msg_1', new Date(), body);
const event = verifyWebhook(body, { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': headers }, secret);
let refused = '';
try {
  verifyWebhook(body + ' ', { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': headers }, secret);
} catch (error) {
  refused = error instanceof WebhookVerificationError ? error.name : 'other';
}
console.log(JSON.stringify({ names, account: account.account_id, event: event.type, refused }));
`,
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          types: ['node'],
          outDir: 'out',
        },
        files: ['use.ts'],
      }),
    );

    execFileSync(process.execPath, [tsc, '-p', '.'], { cwd: project, stdio: 'pipe' });
    // Asynchronously: the service answering it runs in this process.
    const { stdout } = await promisify(execFile)(process.execPath, ['out/use.js'], {
      cwd: project,
      env: { ...process.env, BASE_URL: runtime.baseUrl, API_KEY: apiKey },
      encoding: 'utf8',
      timeout: 60_000,
    });

    expect(JSON.parse(stdout)).toEqual({
      names: ['one', 'two', 'three'],
      account: accountId,
      event: 'instance.created',
      refused: 'WebhookVerificationError',
    });
  });
});
