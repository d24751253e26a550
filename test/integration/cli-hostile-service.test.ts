import { cliHome, fakeService, fakeSsh, runVps, type CliHome } from '../support/cli';

/**
 * The CLI where the service it talks to, or the URL it is given, is not to be trusted: an API (intercepted, or a
 * hostile one) answering instance fields made to be read as ssh options, and a URL in plain http to another machine.
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
