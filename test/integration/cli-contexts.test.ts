import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deposit } from '../../shared/domain/billing';
import { getLogin } from '../../shared/store/logins';
import { cliHome, runVps, runVpsJson, type CliHome } from '../support/cli';
import { latestLink, tokenOf } from '../support/mailbox';
import { useTestRuntime } from '../support/runtime';

/** Several accounts from one machine: contexts, whoami, login with the session kept, and the local demo's limits. */
const mailDir = mkdtempSync(join(tmpdir(), 'cli-mail-'));
const runtime = useTestRuntime({ mailDir });
afterAll(() => rmSync(mailDir, { recursive: true, force: true }));

let home: CliHome;
beforeEach(async () => {
  home = await cliHome();
});
afterEach(() => home.remove());

const configFile = () => join(home.env.XDG_CONFIG_HOME!, 'vps', 'config.json');
const requestId = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** A customer who signed up and confirmed their address in the console, with the password they chose. */
async function signedUp(password = 'correct horse battery') {
  const email = `cli.${Date.now()}.${Math.random().toString(36).slice(2, 8)}@example.com`;
  await runtime.call('POST', '/api/v1/auth/sign-up', { body: { email, password } });
  const token = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));
  await runtime.call('POST', '/api/v1/auth/confirm', { body: { token, password } });
  return { email, password, accountId: (await getLogin(runtime.deps, email))!.account_id };
}

describe('vps context and whoami', () => {
  it('keeps one context per account, switches with context use, --context or VPS_CONTEXT, and says who with whoami', async () => {
    const alpha = await runtime.newAccount();
    const beta = await runtime.newAccount();
    const create = (name: string, key: string) =>
      runVps(home, ['context', 'create', name, '--api-url', runtime.baseUrl], { stdin: `${key}\n` });

    const created = [await create('alpha', alpha.apiKey), await create('beta', beta.apiKey)];
    const current = await runVpsJson(home, ['whoami']);
    const byFlag = await runVpsJson(home, ['whoami', '--context', 'alpha']);
    const byEnv = await runVpsJson(home, ['whoami'], { VPS_CONTEXT: 'alpha' });
    const used = await runVps(home, ['context', 'use', 'alpha']);
    const afterUse = await runVpsJson(home, ['whoami']);
    const listed = await runVps(home, ['context', 'list', '--json']);
    const deleted = await runVps(home, ['context', 'delete', 'beta']);
    const remaining = await runVpsJson(home, ['context', 'list']);
    const unknown = await runVps(home, ['whoami', '--context', 'gamma']);

    expect(created.map((run) => [run.code, run.stderr])).toEqual([
      [0, ''],
      [0, ''],
    ]);
    expect(current).toEqual({
      account_id: beta.accountId,
      email: expect.stringMatching(/@example\.com$/),
      key_prefix: beta.apiKey.slice(0, 12),
      api_url: runtime.baseUrl,
      context: 'beta',
    });
    expect([byFlag.account_id, byFlag.context, byEnv.account_id, byEnv.context]).toEqual([
      alpha.accountId,
      'alpha',
      alpha.accountId,
      'alpha',
    ]);
    expect([used.code, used.stdout]).toEqual([0, `Using context alpha (${runtime.baseUrl}).\n`]);
    expect(afterUse.account_id).toBe(alpha.accountId);
    expect(JSON.parse(listed.stdout)).toEqual([
      { name: 'alpha', current: true, api_url: runtime.baseUrl, key_prefix: `${alpha.apiKey.slice(0, 12)}…`, session_expires_at: null },
      { name: 'beta', current: false, api_url: runtime.baseUrl, key_prefix: `${beta.apiKey.slice(0, 12)}…`, session_expires_at: null },
    ]);
    expect(listed.stdout).not.toContain(alpha.apiKey);
    expect([deleted.code, remaining.map((context: { name: string }) => context.name)]).toEqual([0, ['alpha']]);
    expect([unknown.code, unknown.stderr]).toEqual([2, 'error: no context named gamma (see vps context list)\n']);
    expect((await stat(configFile())).mode & 0o777).toBe(0o600);
  });

  it('refuses to create a context that exists, and saves nothing for a key the service refuses', async () => {
    const { apiKey } = await runtime.newAccount();
    await runVps(home, ['context', 'create', 'main', '--api-url', runtime.baseUrl], { stdin: apiKey });

    const again = await runVps(home, ['context', 'create', 'main', '--api-url', runtime.baseUrl], { stdin: apiKey });
    const refused = await runVps(home, ['context', 'create', 'other', '--api-url', runtime.baseUrl], { stdin: 'svcmcp_not-a-real-key' });

    expect([again.code, again.stderr]).toEqual([2, 'error: context main exists; vps auth init --context main replaces its key\n']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`^error: Invalid or revoked API key \\(HTTP 401, request id ${requestId}\\)\\n$`));
    expect(Object.keys(JSON.parse(await readFile(configFile(), 'utf8')).contexts)).toEqual(['main']);
  });
});

describe('vps login', () => {
  it('signs in with e-mail and password, keeps the session in the context, and vps keys then works', { timeout: 120_000 }, async () => {
    const customer = await signedUp();
    await deposit(runtime.deps, customer.accountId, 1_000_000);

    const login = await runVps(home, ['login', '--email', customer.email, '--api-url', runtime.baseUrl], {
      stdin: `${customer.password}\n`,
    });
    const key = await runVpsJson(home, ['keys', 'create', '--name', 'laptop']);
    const init = await runVps(home, ['auth', 'init', '--api-url', runtime.baseUrl], { stdin: key.full_key });
    const who = await runVpsJson(home, ['whoami']);
    const keys = await runVpsJson(home, ['keys', 'list']);
    const saved = JSON.parse(await readFile(configFile(), 'utf8'));

    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toMatch(new RegExp(`^Signed in as ${customer.email.replace(/\./g, '\\.')} until \\S+; the session is kept in `));
    expect(init.code, init.stderr).toBe(0);
    expect([who.account_id, who.email, who.context]).toEqual([customer.accountId, customer.email, 'default']);
    expect(keys.map((k: { name: string }) => k.name)).toEqual(['laptop']);
    expect(saved).toEqual({
      current: 'default',
      contexts: {
        default: {
          api_url: runtime.baseUrl,
          api_key: key.full_key,
          session: expect.any(String),
          csrf_token: expect.any(String),
          session_expires_at: expect.any(String),
        },
      },
    });
    expect(login.stdout + login.stderr).not.toContain(customer.password);
    expect((await stat(configFile())).mode & 0o777).toBe(0o600);
  });

  it('refuses a wrong password with the service text and saves no session', async () => {
    const customer = await signedUp();

    const run = await runVps(home, ['login', '--email', customer.email, '--api-url', runtime.baseUrl], { stdin: 'not the password\n' });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: Invalid e-mail or password \(HTTP 401/);
    await expect(stat(configFile())).rejects.toThrow(/ENOENT/);
  });
});

describe('the local service fallback', () => {
  it('uses the runtime file only while no context is saved, and says so on stderr', async () => {
    const demo = await runtime.newAccount();
    const mine = await runtime.newAccount();
    await home.useRuntimeFile({ base_url: runtime.baseUrl, api_key: demo.apiKey });

    const before = await runVps(home, ['whoami', '--json']);
    await runVps(home, ['context', 'create', 'mine', '--api-url', runtime.baseUrl], { stdin: mine.apiKey });
    const after = await runVps(home, ['whoami', '--json']);

    expect(JSON.parse(before.stdout).account_id).toBe(demo.accountId);
    expect(before.stderr).toBe(`Using the local service at ${runtime.baseUrl} and its demo account (vps auth init saves another).\n`);
    expect([JSON.parse(after.stdout).account_id, after.stderr]).toEqual([mine.accountId, '']);
  });

  it('never sends the runtime file’s key to an address that is not this machine', async () => {
    const demo = await runtime.newAccount();
    await home.useRuntimeFile({ base_url: 'http://192.0.2.10:8080', api_key: demo.apiKey });

    const run = await runVps(home, ['instances', 'list']);

    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: no API URL: /);
  });
});
