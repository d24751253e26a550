import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliHome, fakeService, fakeSsh, runVps, type CliHome } from '../support/cli';

/**
 * The CLI where the service it talks to, or the URL it is given, is not to be trusted: an API (intercepted, or a
 * hostile one) answering instance fields made to be read as ssh options, a URL in plain http to another machine, and
 * a URL other than the one a key was saved for.
 */
let home: CliHome;
beforeEach(async () => {
  home = await cliHome();
});
afterEach(() => home.remove());

/** An active instance as the service describes it, with `fields` replaced. */
function instanceAnswer(fields: Record<string, unknown>) {
  return {
    instance_id: 42,
    vps_id: 'vps-42',
    status: 'active',
    ipv4: '203.0.113.7',
    domain: null,
    custom_domain: null,
    root_user: 'root',
    root_password: null,
    ssh_port: 22,
    project_name: 'web',
    plan: { flavor: 's-1vcpu-2gb', vcpu: 1, ram_mb: 2048, disk_gb: 50, hourly_price: 0.01786 },
    created_at: '2026-01-01T00:00:00.000Z',
    labels: {},
    ssh_key: { name: 'web', fingerprint: null, public_key: 'ssh-ed25519 AAAA', private_key: null },
    activated_at: '2026-01-01T00:00:20.000Z',
    ...fields,
  };
}

describe('vps ssh against a hostile service', () => {
  it.each([
    {
      field: 'root_user',
      value: '-oProxyCommand=touch /tmp/owned',
      stderr: 'error: the service answered a root_user that is not a user name; ssh was not run\n',
    },
    {
      field: 'ipv4',
      value: '-oProxyCommand=touch /tmp/owned',
      stderr: 'error: the service answered an ipv4 that is not an IPv4 address; ssh was not run\n',
    },
    {
      field: 'ssh_port',
      value: '22 -oProxyCommand=touch /tmp/owned',
      stderr: 'error: the service answered an ssh_port that is not a port; ssh was not run\n',
    },
  ])('does not run ssh when the instance’s $field is made to be read as an option', async ({ field, value, stderr }) => {
    const hostile = await fakeService({ 'GET /api/v1/instances/42': { body: instanceAnswer({ [field]: value }) } });
    onTestFinished(hostile.close);

    const run = await runVps(home, ['ssh', '42', '--', 'uptime'], {
      env: { VPS_API_URL: hostile.url, VPS_API_KEY: 'svcmcp_mine', ...(await fakeSsh(home)) },
    });

    // The fake ssh prints its arguments: nothing on stdout means it never ran.
    expect([run.code, run.stdout, run.stderr]).toEqual([1, '', stderr]);
  });
});

describe('a plain http:// API URL', () => {
  const elsewhere = 'http://192.0.2.10:8080';
  const refusal = `error: ${elsewhere}: an API URL is https://… (plain http:// only to this machine: localhost, 127.0.0.0/8 or ::1), so that keys and passwords are not sent in the clear\n`;

  it.each([
    { command: 'instances list', args: ['instances', 'list'], stdin: undefined },
    { command: 'auth init', args: ['auth', 'init'], stdin: 'svcmcp_mine\n' },
    { command: 'login', args: ['login', '--email', 'me@example.com'], stdin: 'my password\n' },
  ])('is refused by $command as bad usage, before any key or password is sent', async ({ args, stdin }) => {
    const run = await runVps(home, args, {
      env: { VPS_API_URL: elsewhere, VPS_API_KEY: 'svcmcp_mine' },
      ...(stdin === undefined ? {} : { stdin }),
    });

    expect([run.code, run.stdout, run.stderr]).toEqual([2, '', refusal]);
  });
});

describe('a saved key and another URL', () => {
  const savedKey = 'svcmcp_saved-for-the-first';

  /** The service the key was saved for, and another URL that must never receive it. */
  async function twoServices() {
    const first = await fakeService({ 'GET /api/v1/account': { body: { account_id: 'acct-1', email: 'me@example.com' } } });
    const other = await fakeService({
      'GET /api/v1/instances': { body: [] },
      'POST /api/v1/auth/sign-in': {
        body: { account_id: 'acct-9', email: 'me@example.com', csrf_token: 'csrf-other', expires_at: '2030-01-01T00:00:00.000Z' },
        headers: { 'set-cookie': 'session=session-other; HttpOnly' },
      },
    });
    onTestFinished(first.close);
    onTestFinished(other.close);
    const saved = await runVps(home, ['auth', 'init', '--api-url', first.url], { stdin: `${savedKey}\n` });
    expect(saved.code, saved.stderr).toBe(0);
    return { first, other };
  }

  it.each([
    { given: '--api-url', urlFor: (url: string) => ({ args: ['--api-url', url], env: {} }) },
    { given: 'VPS_API_URL', urlFor: (url: string) => ({ args: [], env: { VPS_API_URL: url } }) },
  ])('never sends it to a URL given by $given, and asks for a key for that URL', async ({ urlFor }) => {
    const { first, other } = await twoServices();
    const { args, env } = urlFor(other.url);

    const run = await runVps(home, ['instances', 'list', ...args], { env });

    expect([run.code, run.stderr]).toEqual([
      2,
      `error: no API key: the key of context default is saved for ${first.url} and is sent nowhere else, not to ${other.url}; pass --api-key or set VPS_API_KEY\n`,
    ]);
    expect(other.heard).toEqual([]);
  });

  it('sends a key given for the other URL there, and only that key', async () => {
    const { other } = await twoServices();

    const run = await runVps(home, ['instances', 'list', '--json', '--api-url', other.url], { env: { VPS_API_KEY: 'svcmcp_given' } });

    expect([run.code, run.stdout]).toEqual([0, '[]\n']);
    expect(other.heard).toEqual([{ call: 'GET /api/v1/instances', authorization: 'Bearer svcmcp_given' }]);
  });

  it('keeps a login to another URL in the context without the key, which no later run sends there', async () => {
    const { first, other } = await twoServices();

    const login = await runVps(home, ['login', '--email', 'me@example.com', '--api-url', other.url], { stdin: 'my password\n' });
    const later = await runVps(home, ['instances', 'list']);
    const saved = JSON.parse(await readFile(join(home.env.XDG_CONFIG_HOME!, 'vps', 'config.json'), 'utf8'));

    expect([login.code, login.stderr]).toEqual([
      0,
      `The key context default held was for ${first.url} and is not kept: vps auth init --context default saves one for ${other.url}.\n`,
    ]);
    expect(later.code).toBe(2);
    expect(later.stderr).toMatch(/^error: no API key: /);
    expect(other.heard).toEqual([{ call: 'POST /api/v1/auth/sign-in', authorization: undefined }]);
    expect(saved.contexts).toEqual({
      default: {
        api_url: other.url,
        session: 'session-other',
        csrf_token: 'csrf-other',
        session_expires_at: '2030-01-01T00:00:00.000Z',
      },
    });
  });
});
