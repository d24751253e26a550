import { execFile } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { openSession } from '../../shared/domain/accounts';
import { cliHome, fakeService, fakeSsh, runVps, runVpsJson, type CliHome } from '../support/cli';
import { eventually } from '../support/receiver';
import { listLatestTopUps } from '../../shared/store/top-ups';
import { useTestRuntime } from '../support/runtime';
import { ORDERABLE_FLAVORS } from '../fixtures/flavors';

const runtime = useTestRuntime();
let home: CliHome;
beforeAll(async () => {
  home = await cliHome();
});
afterAll(() => home.remove());

/** A fresh account, reached through the environment as a script would. */
async function account() {
  const { accountId, apiKey } = await runtime.newAccount();
  return { accountId, apiKey, env: { VPS_API_URL: runtime.baseUrl, VPS_API_KEY: apiKey } };
}

const requestId = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

describe('vps instances', () => {
  it('creates with --wait until active and prints the instance with its IPv4, secrets hidden', async () => {
    const { env } = await account();

    const run = await runVps(home, ['instances', 'create', '--name', 'web', '--flavor', 's-1vcpu-2gb', '--wait', '--json'], { env });

    expect(run.code, run.stderr).toBe(0);
    const instance = JSON.parse(run.stdout);
    expect(instance).toMatchObject({
      project_name: 'web',
      status: 'active',
      ipv4: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/),
      plan: { flavor: 's-1vcpu-2gb' },
    });
    // Hidden secrets are null in JSON: no script can take a placeholder for a password.
    expect(instance.root_password).toBeNull();
    expect(instance.ssh_key.private_key).toBeNull();
    // Not a terminal: one plain line per status change on stderr, ending active.
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(new RegExp(`^instance ${instance.instance_id}: active \\(\\d+s\\)$`));
  });

  it('names an instance by its project name when no other has it, and says which ids share one', async () => {
    const { env } = await account();
    const web = await runVpsJson(home, ['instances', 'create', '--name', 'web', '--flavor', 's-1vcpu-2gb'], env);
    const twins = [
      await runVpsJson(home, ['instances', 'create', '--name', 'twin', '--flavor', 's-1vcpu-2gb'], env),
      await runVpsJson(home, ['instances', 'create', '--name', 'twin', '--flavor', 's-1vcpu-2gb'], env),
    ];

    const waited = await runVpsJson(home, ['instances', 'wait', 'web', '--until', 'active'], env);
    const got = await runVpsJson(home, ['instances', 'get', 'web'], env);
    const ambiguous = await runVps(home, ['instances', 'get', 'twin'], { env });
    const missing = await runVps(home, ['instances', 'delete', 'nothing-here', '--yes'], { env });

    expect([waited.instance_id, waited.status]).toEqual([web.instance_id, 'active']);
    expect(got.instance_id).toBe(web.instance_id);
    expect([ambiguous.code, ambiguous.stderr]).toEqual([
      1,
      `error: 2 instances are named twin (${twins.map((twin) => twin.instance_id).join(', ')}): give the id\n`,
    ]);
    expect([missing.code, missing.stderr]).toEqual([1, 'error: no instance is named nothing-here\n']);
  });

  it('refuses a private key given as --ssh-key before sending anything', async () => {
    const { url, heard, close } = await fakeService();
    onTestFinished(close);
    const keyFile = `${home.dir}/id_ed25519`;
    await writeFile(keyFile, '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n');

    const run = await runVps(home, ['instances', 'create', '--name', 'k', '--flavor', 's-1vcpu-2gb', '--ssh-key', keyFile], {
      env: { VPS_API_URL: url, VPS_API_KEY: 'svcmcp_unused' },
    });

    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`error: ${keyFile} is a private key: give the public one (${keyFile}.pub); nothing was sent\n`);
    expect(heard).toEqual([]);
  });

  it('creates with labels and user data, lists by selector, renames and relabels', async () => {
    const { env } = await account();
    const userDataFile = `${home.dir}/cloud-config.yaml`;
    await writeFile(userDataFile, '#cloud-config\npackages: [nginx]\n');

    const created = await runVps(
      home,
      [
        'instances',
        'create',
        '--name',
        'lab',
        '--flavor',
        's-1vcpu-2gb',
        '--label',
        'env=prod',
        '--label',
        'tier=web',
        '--user-data-file',
        userDataFile,
        '--json',
      ],
      { env },
    );
    const id = String(JSON.parse(created.stdout).instance_id);
    const listed = await runVps(home, ['instances', 'list', '-l', 'env=prod,tier', '--json'], { env });
    const none = await runVps(home, ['instances', 'list', '-l', '!env', '--json'], { env });
    const renamed = await runVps(home, ['instances', 'rename', id, 'lab2', '--json'], { env });
    const relabelled = await runVps(home, ['instances', 'label', id, 'env=dev', 'tier-', '--json'], { env });
    const shown = await runVps(home, ['instances', 'get', id], { env });

    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout).labels).toEqual({ env: 'prod', tier: 'web' });
    expect(JSON.parse(listed.stdout).map((instance: { instance_id: number }) => String(instance.instance_id))).toEqual([id]);
    expect(JSON.parse(none.stdout)).toEqual([]);
    expect(JSON.parse(renamed.stdout).project_name).toBe('lab2');
    expect(JSON.parse(relabelled.stdout).labels).toEqual({ env: 'dev' });
    expect(shown.stdout).toMatch(/^Labels +env=dev$/m);
  });

  // Each step is a process of its own that starts Node and waits for a job: generous on a busy machine.
  it('powers off, on and reboots with --wait, and resizes to a bigger flavor', { timeout: 180_000 }, async () => {
    const { env } = await account();
    const { instance_id: id } = await runVpsJson(
      home,
      ['instances', 'create', '--name', 'cycle', '--flavor', 's-1vcpu-2gb', '--wait'],
      env,
    );

    const off = await runVpsJson(home, ['instances', 'power-off', String(id), '--wait'], env);
    const on = await runVpsJson(home, ['instances', 'power-on', String(id), '--wait'], env);
    const again = await runVps(home, ['instances', 'power-on', String(id)], { env });
    const rebooted = await runVpsJson(home, ['instances', 'reboot', String(id), '--wait'], env);
    const resized = await runVpsJson(home, ['instances', 'resize', String(id), '--flavor', 's-2vcpu-4gb', '--wait'], env);

    expect([off.status, on.status, rebooted.status, resized.status]).toEqual(['stopped', 'active', 'active', 'active']);
    // The 409's explanation, not only its code.
    expect([again.code, again.stderr]).toEqual([
      1,
      expect.stringMatching(
        /^error: lifecycle conflict: Cannot power on while the instance is active \(HTTP 409, request id [0-9a-f-]{36}\)\n$/,
      ),
    ]);
    expect(resized.plan).toEqual({ flavor: 's-2vcpu-4gb', vcpu: 2, ram_mb: 4096, disk_gb: 40, hourly_price: 0.03571 });
  });

  it('answers an action without --wait with its job, which jobs get shows', async () => {
    const { env } = await account();
    const { instance_id: id } = await runVpsJson(home, ['instances', 'create', '--name', 'job', '--flavor', 's-1vcpu-2gb', '--wait'], env);

    const started = await runVpsJson(home, ['instances', 'reboot', String(id)], env);
    await runtime.waitForJob(env.VPS_API_KEY, started.job_id);
    const job = await runVpsJson(home, ['jobs', 'get', started.job_id], env);

    expect(started).toEqual({ ok: true, action: 'reboot', job_id: expect.any(String) });
    expect(job).toMatchObject({ job_id: started.job_id, type: 'reboot', instance_id: id, status: 'succeeded' });
  });

  it('deletes with --wait until the delete job has succeeded, after which the instance is 404', async () => {
    const { env } = await account();
    const { instance_id: id } = await runVpsJson(home, ['instances', 'create', '--name', 'gone', '--flavor', 's-1vcpu-2gb', '--wait'], env);

    const unconfirmed = await runVps(home, ['instances', 'delete', String(id)], { env });
    const stillThere = await runtime.call('GET', `/api/v1/instances/${id}`, { apiKey: env.VPS_API_KEY });
    const job = await runVpsJson(home, ['instances', 'delete', String(id), '--wait', '--yes'], env);
    const after = await runVps(home, ['instances', 'get', String(id)], { env });

    expect(job).toMatchObject({ type: 'delete', instance_id: id, status: 'succeeded' });
    // Without a terminal to ask on, a delete needs --yes, and nothing is sent without it.
    expect([unconfirmed.code, unconfirmed.stderr]).toEqual([
      2,
      `error: Delete instance ${id}: confirm with --yes (no terminal to ask on); nothing was sent\n`,
    ]);
    expect(stillThere.status).toBe(200);
    expect(after.code).toBe(1);
    expect(after.stdout).toBe('');
    expect(after.stderr).toMatch(new RegExp(`^error: Instance not found \\(HTTP 404, request id ${requestId}\\)\\n$`));
  });

  it('lists instances as a table when not asked for JSON, and as a JSON array with --json', async () => {
    const { env } = await account();
    const created = await runVpsJson(home, ['instances', 'create', '--name', 'listed', '--flavor', 's-2vcpu-2gb'], env);
    await runtime.waitForStatus(env.VPS_API_KEY, created.instance_id, ['active']);

    const table = await runVps(home, ['instances', 'list'], { env });
    const list = await runVpsJson(home, ['instances', 'list'], env);
    const asJson = await runVps(home, ['instances', 'list', '-o', 'json'], { env });
    const asYaml = await runVps(home, ['instances', 'list', '-o', 'yaml'], { env });
    const columns = await runVps(home, ['instances', 'list', '--format', 'ID,IPv4', '--no-header'], { env });

    // Piped: plain aligned columns, no box-drawing characters, no escape codes.
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID +NAME +STATUS +FLAVOR +IPV4 +CREATED$/m);
    expect(table.stdout).toMatch(new RegExp(`^${created.instance_id} +listed +active +s-2vcpu-2gb +`, 'm'));
    expect(table.stdout).not.toMatch(/[│┌┐└┘├┤─]/);
    expect(table.stdout).not.toContain(String.fromCharCode(27));
    expect(list).toEqual([expect.objectContaining({ instance_id: created.instance_id, project_name: 'listed', root_password: null })]);
    expect(JSON.parse(asJson.stdout)).toEqual(list);
    expect(parseYaml(asYaml.stdout)).toEqual(list);
    const { ipv4 } = list[0];
    expect(columns.stdout).toBe(`${created.instance_id}  ${ipv4}\n`);
  });

  it('refuses a --format column the list does not have, naming those it has', async () => {
    const { env } = await account();

    const run = await runVps(home, ['instances', 'list', '--format', 'ID,COLOUR'], { env });

    expect([run.code, run.stderr]).toEqual([2, 'error: no column COLOUR: choose from ID, NAME, STATUS, FLAVOR, IPV4, CREATED\n']);
  });

  it('shows the root password with --show-secrets and writes the private key only to --save-key, mode 0600', async () => {
    const { env, apiKey } = await account();
    const keyFile = join(home.dir, 'vps-key');

    const created = await runVps(home, ['instances', 'create', '--name', 'keys', '--flavor', 's-1vcpu-2gb', '--save-key', keyFile], {
      env,
    });
    const id = Number(/^ID +(\d+)$/m.exec(created.stdout)?.[1]);
    const shown = await runVpsJson(home, ['instances', 'get', String(id), '--show-secrets'], env);
    const direct = await runtime.call('GET', `/api/v1/instances/${id}`, { apiKey });

    expect(created.code).toBe(0);
    expect(created.stdout).toContain(`saved to ${keyFile}`);
    expect(created.stdout).not.toContain('PRIVATE KEY');
    expect(created.stdout).not.toContain(direct.body.root_password);
    expect(await readFile(keyFile, 'utf8')).toBe(`${direct.body.ssh_key.private_key.trimEnd()}\n`);
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    expect(shown.root_password).toBe(direct.body.root_password);
    expect(shown.ssh_key.private_key).toBe(direct.body.ssh_key.private_key);
  });

  it('prints the orderable flavors with their plans', async () => {
    const flavors = await runVpsJson(home, ['flavors'], { VPS_API_URL: runtime.baseUrl });

    expect(flavors.map((f: { flavor: string }) => f.flavor)).toEqual(ORDERABLE_FLAVORS);
  });

  it('prints monthly prices beside hourly ones (672 hours, the monthly cap)', async () => {
    const run = await runVps(home, ['flavors', '--format', 'flavor,usd/hour,usd/month'], { env: { VPS_API_URL: runtime.baseUrl } });

    expect(run.stdout.split('\n').slice(0, 2)).toEqual(['FLAVOR         USD/HOUR  USD/MONTH', 's-1vcpu-2gb    0.01786   12.00']);
  });

  it('prints its version', async () => {
    const run = await runVps(home, ['--version']);

    expect([run.code, run.stdout]).toEqual([0, '1.0.0\n']);
  });
});

describe('vps jobs list', () => {
  it("lists an instance's jobs newest first, and another account's instance is 404", async () => {
    const { env, apiKey } = await account();
    const other = await runtime.newAccount();
    const created = await runVpsJson(home, ['instances', 'create', '--name', 'jobs', '--flavor', 's-1vcpu-2gb', '--wait'], env);
    await runVpsJson(home, ['instances', 'power-off', 'jobs', '--wait'], env);

    const listed = await runVpsJson(home, ['jobs', 'list', 'jobs'], env);
    const table = await runVps(home, ['jobs', 'list', String(created.instance_id), '--format', 'TYPE,STATUS', '--no-header'], { env });
    const own = await runtime.call('GET', `/api/v1/instances/${created.instance_id}/jobs`, { apiKey });
    const foreign = await runtime.call('GET', `/api/v1/instances/${created.instance_id}/jobs`, { apiKey: other.apiKey });

    expect(listed.map((job: { type: string; status: string }) => [job.type, job.status])).toEqual([
      ['power_off', 'succeeded'],
      ['provision', 'succeeded'],
    ]);
    expect(listed.every((job: { instance_id: number }) => job.instance_id === created.instance_id)).toBe(true);
    expect(table.stdout).toBe('power_off  succeeded\nprovision  succeeded\n');
    expect(own.body).toEqual(listed);
    expect([foreign.status, foreign.body.error]).toEqual([404, 'Instance not found']);
  });
});

describe('vps ssh', () => {
  it('runs ssh as root on the instance’s address and port with the key --save-key wrote, and ends with ssh’s exit code', async () => {
    const { env } = await account();
    const keyFile = join(home.dir, 'ssh-web-key');
    const created = await runVpsJson(
      home,
      ['instances', 'create', '--name', 'ssh-web', '--flavor', 's-1vcpu-2gb', '--wait', '--save-key', keyFile],
      env,
    );

    const run = await runVps(home, ['ssh', 'ssh-web', '--', 'uptime'], { env: { ...env, ...(await fakeSsh(home)) } });

    expect([run.code, run.stderr]).toEqual([7, '']);
    expect(run.stdout.trim().split('\n')).toEqual([
      '-i',
      keyFile,
      '-o',
      'IdentitiesOnly=yes',
      '-p',
      String(created.ssh_port),
      '--',
      `root@${created.ipv4}`,
      'uptime',
    ]);
  });

  it('leaves the key to the SSH agent when none was saved, and refuses an instance that is not active', async () => {
    const { env, apiKey } = await account();
    const created = await runVpsJson(home, ['instances', 'create', '--name', 'ssh-agent', '--flavor', 's-1vcpu-2gb', '--wait'], env);
    const path = await fakeSsh(home);

    const viaAgent = await runVps(home, ['ssh', String(created.instance_id)], { env: { ...env, ...path } });
    const off = await runtime.call('POST', `/api/v1/instances/${created.instance_id}/actions`, { apiKey, body: { type: 'power_off' } });
    await runtime.waitForStatus(apiKey, created.instance_id, ['stopped']);
    const stopped = await runVps(home, ['ssh', String(created.instance_id)], { env: { ...env, ...path } });

    expect([viaAgent.code, viaAgent.stdout]).toEqual([7, `-p\n${created.ssh_port}\n--\nroot@${created.ipv4}\n`]);
    expect(off.status).toBe(200);
    expect([stopped.code, stopped.stdout, stopped.stderr]).toEqual([
      1,
      '',
      `error: instance ${created.instance_id} is stopped: SSH answers once it is active\n`,
    ]);
  });
});

describe('vps completion', () => {
  const complete = async (script: string, words: string[]) =>
    (
      await promisify(execFile)('bash', [
        '-c',
        `source /dev/stdin <<'SCRIPT'\n${script}SCRIPT\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _vps; echo "\${COMPREPLY[*]}"`,
      ])
    ).stdout.trim();

  it('completes commands, subcommands, options and flavors in bash from the command tree', async () => {
    const script = (await runVps(home, ['completion', 'bash'])).stdout;

    expect(await complete(script, ['vps', 'instances', 'l'])).toBe('list label');
    expect(await complete(script, ['vps', '--json', 'instances', 'list', '--s'])).toBe('--show-secrets --selector --status');
    expect((await complete(script, ['vps', 'instances', 'create', '--flavor', ''])).split(' ')).toEqual([...ORDERABLE_FLAVORS]);
    expect(await complete(script, ['vps', 'who'])).toBe('whoami');
  });

  it('prints zsh and fish scripts, and refuses another shell as bad usage', async () => {
    const [zsh, fish, tcsh] = [
      await runVps(home, ['completion', 'zsh']),
      await runVps(home, ['completion', 'fish']),
      await runVps(home, ['completion', 'tcsh']),
    ];

    expect(zsh.stdout).toContain('bashcompinit');
    expect(zsh.stdout).toContain('complete -o default -F _vps vps');
    expect(fish.stdout).toContain("complete -c vps -n '__fish_use_subcommand' -a 'instances' -d 'deploy, list, act on and delete servers'");
    expect(fish.stdout).toContain("complete -c vps -n '__fish_seen_subcommand_from create' -l flavor -r -a '");
    expect(tcsh.code).toBe(2);
    expect(tcsh.stderr).toContain("error: command-argument value 'tcsh' is invalid for argument 'shell'");
  });
});

describe('vps keys', () => {
  it('creates a key shown once and revokes it, after which the key is refused', { timeout: 120_000 }, async () => {
    const { accountId, env } = await account();
    const { session, csrfToken } = await openSession(runtime.deps, accountId);
    const sessionEnv = { VPS_API_URL: runtime.baseUrl, VPS_SESSION: session, VPS_CSRF_TOKEN: csrfToken };

    const created = await runVps(home, ['keys', 'create', '--name', 'ci', '--json'], { env: sessionEnv });
    const key = JSON.parse(created.stdout);
    const usable = await runVps(home, ['instances', 'list', '--api-key', key.full_key], { env });
    const revoked = await runVpsJson(home, ['keys', 'revoke', String(key.id), '--yes'], sessionEnv);
    const listed = await runVpsJson(home, ['keys', 'list'], sessionEnv);
    const refused = await runVps(home, ['instances', 'list', '--api-key', key.full_key], { env });

    expect(created.code).toBe(0);
    expect(created.stderr).toBe('This is the only time the full key is shown: store it now.\n');
    expect(key).toMatchObject({ name: 'ci', is_active: true, full_key: expect.stringMatching(/^svcmcp_[0-9A-Za-z]{38}$/) });
    expect(usable.code).toBe(0);
    expect(revoked).toEqual({ ok: true, id: key.id });
    expect(listed).toEqual(expect.arrayContaining([expect.objectContaining({ id: key.id, name: 'ci', is_active: false })]));
    expect(JSON.stringify(listed)).not.toContain(key.full_key);
    expect([refused.code, refused.stderr]).toEqual([
      1,
      expect.stringMatching(new RegExp(`^error: Invalid or revoked API key \\(HTTP 401, request id ${requestId}\\)\\n$`)),
    ]);
  });

  it('refuses to run without a session, as bad usage', async () => {
    const run = await runVps(home, ['keys', 'list'], { env: { VPS_API_URL: runtime.baseUrl } });

    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'error: key management needs a signed-in session: run `vps login`, pass --session and --csrf-token, or set VPS_SESSION and VPS_CSRF_TOKEN\n',
    );
  });
});

describe('vps error paths', () => {
  it('refuses a flavor that is not offered before sending anything (exit 2)', async () => {
    const { env, apiKey } = await account();

    const run = await runVps(home, ['instances', 'create', '--name', 'typo', '--flavor', 's-1vcpu-2g'], { env });

    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      "error: option '--flavor <flavor>' argument 's-1vcpu-2g' is invalid. Allowed choices are s-1vcpu-2gb, s-2vcpu-2gb, s-2vcpu-4gb, s-4vcpu-8gb, s-8vcpu-16gb, s-16vcpu-32gb.",
    );
    expect((await runtime.call('GET', '/api/v1/instances', { apiKey })).body).toEqual([]);
  });

  it('refuses a --save-key file that exists before deploying anything (exit 2)', async () => {
    const { env, apiKey } = await account();
    const existing = join(home.dir, 'existing-key');
    await writeFile(existing, 'mine');

    const run = await runVps(home, ['instances', 'create', '--name', 'kept', '--flavor', 's-1vcpu-2gb', '--save-key', existing], { env });

    expect([run.code, run.stderr]).toEqual([2, `error: ${existing} exists; not overwriting it\n`]);
    expect(await readFile(existing, 'utf8')).toBe('mine');
    expect((await runtime.call('GET', '/api/v1/instances', { apiKey })).body).toEqual([]);
  });

  it('says where to find a key when there is none (exit 2)', async () => {
    const run = await runVps(home, ['instances', 'list'], { env: { VPS_API_URL: runtime.baseUrl } });

    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'error: no API key: pass --api-url and --api-key, set VPS_API_URL and VPS_API_KEY, run `vps auth init`, or start the local service with `npm start`\n',
    );
  });

  it.each([
    {
      args: ['instances', 'get', '999999'],
      code: 1,
      stderr: new RegExp(`^error: Instance not found \\(HTTP 404, request id ${requestId}\\)\\n$`),
    },
    {
      args: ['jobs', 'get', 'no-such-job'],
      code: 1,
      stderr: new RegExp(`^error: Job not found \\(HTTP 404, request id ${requestId}\\)\\n$`),
    },
    {
      args: ['instances', 'get', '0'],
      code: 2,
      stderr: /^error: command-argument value '0' is invalid for argument 'id'\. An instance id is a positive integer\.\n/,
    },
    { args: ['instances', 'resize', '1'], code: 2, stderr: /^error: required option '--flavor <flavor>' not specified\n/ },
    { args: ['instances', 'explode'], code: 2, stderr: /^error: unknown command 'explode'\n/ },
  ])('vps $args exits $code with the reason on stderr', async ({ args, code, stderr }) => {
    const { env } = await account();

    const run = await runVps(home, args, { env });

    expect(run.code).toBe(code);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(stderr);
  });

  it('gives the service text and request id for a refusal, with the API key itself in no output', async () => {
    const { env, apiKey } = await account();

    const run = await runVps(home, ['instances', 'create', '--name', 'x'.repeat(65), '--flavor', 's-1vcpu-2gb'], { env });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(`^error: project_name must be at most 64 characters \\(HTTP 400, request id ${requestId}\\)\\n$`),
    );
    expect(run.stdout + run.stderr).not.toContain(apiKey);
  });
});

describe('vps balance and top-up', () => {
  const paySession = (sessionId: string) => fetch(`${runtime.payments.url}/_sim/sessions/${sessionId}/pay`, { method: 'POST' });

  it('prints the checkout page, then the balance once paid', { timeout: 120_000 }, async () => {
    const { env } = await account();

    const opened = await runVpsJson(home, ['top-up', '20'], env);
    await paySession(opened.provider_session_id);
    await runtime.payments.settled();
    const balance = await runVpsJson(home, ['balance'], env);
    const table = await runVps(home, ['balance'], { env });

    expect(opened).toMatchObject({ status: 'open', amount_usd: '20.00', checkout_url: expect.stringContaining('/pay/cs_test_') });
    expect(balance).toMatchObject({ balance_usd: '70.00', runway_hours: null, burn_rate_usd_per_hour: '0.00' });
    expect(table.stdout).toContain('$70.00');
    expect(table.stdout).toContain('nothing is billed');
  });

  // A process of its own that starts Node and waits for the credit: generous on a busy machine.
  it('waits with --wait until the payment is confirmed and says what was added', { timeout: 120_000 }, async () => {
    const { env, accountId } = await account();

    const run = runVps(home, ['top-up', '12.50', '--wait'], { env });
    // Read from the store, not the API: polling the API would spend the account's rate limit, which the CLI shares.
    const [open] = await eventually(
      async () => {
        const latest = await listLatestTopUps(runtime.deps, accountId, 1);
        return latest[0]?.checkout_url ? latest : undefined;
      },
      'the top-up',
      60_000,
    );
    await paySession(open!.provider_session_id!);
    const done = await run;

    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toContain(`Open this page to pay $12.50:\n${open!.checkout_url}`);
    expect(done.stdout).toBe('$12.50 added. Balance: $62.50.\n');
  });

  it.each(['4.99', '1000.01', '10.001', 'ten'])('refuses %s before sending anything (exit 2)', async (amount) => {
    const { env } = await account();

    const run = await runVps(home, ['top-up', amount], { env });

    expect(run.code).toBe(2);
    expect(run.stderr).toContain('An amount is 5 to 1000 dollars, with at most two decimals.');
  });
});

describe('vps help', () => {
  it.each([
    ['instances', 'list'],
    ['instances', 'get'],
    ['instances', 'create'],
    ['instances', 'delete'],
    ['instances', 'power-on'],
    ['instances', 'power-off'],
    ['instances', 'reboot'],
    ['instances', 'resize'],
    ['instances', 'wait'],
    ['jobs', 'get'],
    ['flavors'],
    ['balance'],
    ['top-up'],
    ['keys', 'list'],
    ['keys', 'create'],
    ['keys', 'revoke'],
    ['auth', 'init'],
  ])('vps %s %s --help shows an example of that command', async (...command) => {
    const run = await runVps(home, [...command.filter(Boolean), '--help']);

    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`\\nExamples?:\\n  \\$ (\\S+=\\S+ )*vps ${command.filter(Boolean).join(' ')}`));
  });
});

describe('vps credentials', () => {
  it('uses the running local service from its runtime file when nothing else is given', async () => {
    const { apiKey } = await runtime.newAccount();
    const local = await cliHome();
    await local.useRuntimeFile({ base_url: runtime.baseUrl, api_key: apiKey });
    try {
      const run = await runVps(local, ['instances', 'list', '--json']);

      expect([run.code, JSON.parse(run.stdout)]).toEqual([0, []]);
    } finally {
      await local.remove();
    }
  });

  it('takes the flag over VPS_API_KEY, VPS_API_KEY over the auth init file, and that file over the runtime file', async () => {
    const good = await runtime.newAccount();
    const other = await runtime.newAccount();
    const local = await cliHome();
    await local.useRuntimeFile({ base_url: runtime.baseUrl, api_key: other.apiKey });
    try {
      await runtime.call('POST', '/api/v1/instances', { apiKey: good.apiKey, body: { project_name: 'mine', flavor: 's-1vcpu-2gb' } });
      const names = async (args: string[], env: Record<string, string> = {}) =>
        (await runVpsJson(local, ['instances', 'list', ...args], env)).map((i: { project_name: string }) => i.project_name);

      const fromRuntimeFile = await names([]);
      const init = await runVps(local, ['auth', 'init', '--api-url', runtime.baseUrl], { stdin: `${good.apiKey}\n` });
      const configFile = join(local.env.XDG_CONFIG_HOME!, 'vps', 'config.json');
      const fromConfig = await names([]);
      const fromEnv = await names([], { VPS_API_KEY: other.apiKey });
      const fromFlag = await names(['--api-key', good.apiKey], { VPS_API_KEY: other.apiKey });

      expect([fromRuntimeFile, fromConfig, fromEnv, fromFlag]).toEqual([[], ['mine'], [], ['mine']]);
      expect(init.code).toBe(0);
      expect(init.stdout).toMatch(/^Saved the API URL and key of \S+@example\.com to (.+) \(mode 0600\) as context default\.\n$/);
      expect(init.stdout).toContain(configFile);
      expect(JSON.parse(await readFile(configFile, 'utf8'))).toEqual({
        current: 'default',
        contexts: { default: { api_url: runtime.baseUrl, api_key: good.apiKey } },
      });
      expect((await stat(configFile)).mode & 0o777).toBe(0o600);
    } finally {
      await local.remove();
    }
  });

  it.each([
    { why: 'no key on standard input', args: (url: string) => ['auth', 'init', '--api-url', url], code: 2, text: 'error: no API key' },
    { why: 'no URL given', args: () => ['auth', 'init'], code: 2, text: 'error: no API URL' },
  ])('auth init with $why exits $code and sends nothing, whatever key the runtime file holds', async ({ args, code, text }) => {
    const { apiKey } = await runtime.newAccount();
    const local = await cliHome();
    const { url, heard, close } = await fakeService();
    try {
      await local.useRuntimeFile({ base_url: url, api_key: apiKey });

      const run = await runVps(local, args(url), { stdin: '' });

      expect(run.code).toBe(code);
      expect(run.stderr).toContain(text);
      expect(heard).toEqual([]);
      await expect(stat(join(local.env.XDG_CONFIG_HOME!, 'vps', 'config.json'))).rejects.toThrow(/ENOENT/);
    } finally {
      await close();
      await local.remove();
    }
  });

  it('auth init saves nothing when the service refuses the key', async () => {
    const local = await cliHome();
    try {
      const run = await runVps(local, ['auth', 'init', '--api-url', runtime.baseUrl], { stdin: 'svcmcp_not-a-real-key\n' });

      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^error: Invalid or revoked API key \(HTTP 401, /);
      await expect(stat(join(local.env.XDG_CONFIG_HOME!, 'vps', 'config.json'))).rejects.toThrow(/ENOENT/);
    } finally {
      await local.remove();
    }
  });
});
