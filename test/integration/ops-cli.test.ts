import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { repositoryRoot } from '../../infra/local/runtime';
import { stackEnv } from '../../infra/ops/target';
import { sha256Hex } from '../../shared/model/crypto';
import { issueApiKey } from '../../shared/domain/accounts';
import { getAccount, updateAccountFlags } from '../../shared/store/accounts';
import { listLedgerEntries } from '../../shared/store/ledger';
import { getSession } from '../../shared/store/sessions';
import { capacityShardItems } from '../support/capacity';
import { runNode, type ProcessRun } from '../support/child-process';
import { useTestRuntime, writeRuntimeFile } from '../support/runtime';

const runtime = useTestRuntime();
let runtimeDir: string;
let runtimeFile: string;

beforeAll(async () => {
  runtimeDir = await mkdtemp(join(tmpdir(), 'ops-cli-'));
  runtimeFile = join(runtimeDir, 'runtime.json');
  await writeRuntimeFile(runtime, runtimeFile);
});
afterAll(() => rm(runtimeDir, { recursive: true, force: true }));

/**
 * The CLI as operators run it (`npm run ops` is tsx on the project's Node), pointed at this file's runtime, from a
 * shell that sets none of the service's logging settings (the tests' own silence them).
 */
function ops(args: readonly string[], env: Record<string, string> = {}): Promise<ProcessRun> {
  const shell = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('POWERTOOLS_')));
  return runNode([resolve(repositoryRoot, 'node_modules/tsx/dist/cli.mjs'), 'infra/ops/cli.ts', ...args], {
    env: { ...shell, OPS_RUNTIME_FILE: runtimeFile, ...env },
  });
}

/** A successful --json run: exactly one JSON object on stdout, nothing on stderr. */
async function opsJson(...args: string[]): Promise<Record<string, any>> {
  const run = await ops([...args, '--json']);
  const lines = run.stdout.split('\n');
  if (run.code !== 0 || run.stderr !== '' || lines.length !== 2 || lines[1] !== '') {
    throw new Error(`ops ${args.join(' ')} --json: ${JSON.stringify(run)}`);
  }
  return JSON.parse(run.stdout);
}

/** The stored session behind a printed session token, and what its CSRF token must hash to. */
const storedSession = async (output: Record<string, any>) => ({
  stored: await getSession(runtime.deps, sha256Hex(output.session)),
  csrfHash: sha256Hex(output.csrf_token),
});

/** Everything an operator command could change, to show a refused one changed nothing. */
async function storedState() {
  const tables = ['accounts', 'ledger', 'counters', 'sessions', 'apiKeys', 'instances'] as const;
  const scans = await Promise.all(
    tables.map((table) => runtime.deps.dynamo.send(new ScanCommand({ TableName: runtime.tableNames[table], ConsistentRead: true }))),
  );
  return Object.fromEntries(tables.map((table, i) => [table, scans[i]?.Items ?? []]));
}

describe('refusals, target and help', () => {
  const usageCases = [
    'account deposit ID abc',
    'account deposit nope 5',
    'account deposit ID',
    'account suspend ID extra',
    'capacity set --flavor s-9 --limit 1',
    'capacity set --ipv4 -1',
    'instance release 999999',
    'frobnicate',
  ];
  const runs = new Map<string, ProcessRun>();
  let before: Awaited<ReturnType<typeof storedState>>;

  // One batch of processes, run side by side: each costs about a second of start-up.
  beforeAll(async () => {
    const { accountId } = await runtime.newAccount();
    before = await storedState();
    const batch: [string, Promise<ProcessRun>][] = [
      ...usageCases.map((command) => [command, ops(command.replace('ID', accountId).split(' '))] as [string, Promise<ProcessRun>]),
      ['missing service', ops(['billing', 'review', '--json'], { OPS_RUNTIME_FILE: join(tmpdir(), 'no-such-runtime.json') })],
      ['help', ops(['help'])],
    ];
    for (const [name, run] of batch) runs.set(name, await run);
  });

  it.each(usageCases)('%s: exit 2, one line on stderr, nothing on stdout', (command) => {
    const run = runs.get(command);
    expect(run?.code).toBe(2);
    expect(run?.stdout).toBe('');
    expect(run?.stderr).toMatch(/^error: [^\n]+\n$/);
  });

  it('refused commands change nothing', async () => {
    expect(await storedState()).toEqual(before);
  });

  it('without a local service: exit 1 and says how to start one', () => {
    expect(runs.get('missing service')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: no local service found: start it with npm start\n',
    });
  });

  it('help prints the usage (exit 0)', () => {
    expect(runs.get('help')).toMatchObject({
      code: 0,
      stderr: '',
      stdout: expect.stringContaining('capacity set --ipv4 N | --flavor F --limit N'),
    });
  });

  it("maps a stack's outputs to the settings, and names the outputs it lacks", () => {
    const outputs: Record<string, string> = {
      UpstreamTokenSecretArn: 'arn:secret',
      UpstreamBaseUrl: 'https://upstream.example',
      ...Object.fromEntries(Object.keys(runtime.tableNames).map((t) => [`${t[0]!.toUpperCase()}${t.slice(1)}TableName`, `physical-${t}`])),
      ...Object.fromEntries(['Provision', 'Power', 'Resize', 'Delete'].map((w) => [`${w}StateMachineArn`, `arn:${w}`])),
    };
    expect(stackEnv('vps-dev', 'eu-west-1', outputs)).toMatchObject({
      AWS_REGION: 'eu-west-1',
      DYNAMODB_ENDPOINT: '',
      UPSTREAM_TOKEN_SECRET_ARN: 'arn:secret',
      UPSTREAM_BASE_URL: 'https://upstream.example',
      API_KEYS_TABLE: 'physical-apiKeys',
      DELETE_STATE_MACHINE_ARN: 'arn:Delete',
    });
    const { LedgerTableName: _, ...withoutLedger } = outputs;
    expect(() => stackEnv('vps-dev', 'eu-west-1', withoutLedger)).toThrow('stack vps-dev has no output LedgerTableName');
  });
});

describe('changes hard to take back', () => {
  it('--dry-run says what charge, delete and capacity set would do and changes nothing', async () => {
    const { accountId } = await runtime.newAccount({ depositUsd: '10' });
    const before = await storedState();

    const charged = await opsJson('account', 'charge', accountId, '12.50', '--dry-run');
    const deleted = await ops(['account', 'delete', accountId, '--dry-run']);
    const sized = await opsJson('capacity', 'set', '--ipv4', '3', '--dry-run');

    expect(charged).toMatchObject({ account_id: accountId, amount_micros: 12_500_000, balance_after_micros: -2_500_000, dry_run: true });
    expect([deleted.code, deleted.stdout]).toEqual([0, `${accountId}: would be deleted (dry run: nothing changed)\n`]);
    expect(sized).toMatchObject({ pool: 'ipv4', limit: 3, dry_run: true });
    expect(await storedState()).toEqual(before);
  });

  it('account delete refuses while the account has live instances, naming them, and deletes once they are gone', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    const { instance_id: id } = await runtime.activeInstance(apiKey);

    const refused = await ops(['account', 'delete', accountId, '--yes']);
    const afterRefusal = await getAccount(runtime.deps, accountId);
    const removed = await runtime.call('DELETE', `/api/v1/instances/${id}`, { apiKey });
    await runtime.waitForJob(apiKey, removed.body.job_id);
    const deleted = await opsJson('account', 'delete', accountId, '--yes');

    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `error: ${accountId} has 1 live instance(s) (${id} active): their servers would run on with nobody billed; delete them first (or suspend the account); nothing changed\n`,
    );
    expect(afterRefusal?.deleted_at).toBeNull();
    expect(deleted.deleted_at).toEqual(expect.any(String));
  });

  it('account find and account list read accounts by e-mail and all of them', async () => {
    const email = `find.${Date.now()}@example.com`;
    const created = await opsJson('account', 'create', '--email', email);

    const found = await opsJson('account', 'find', email.toUpperCase());
    const listed = await opsJson('account', 'list');
    const missing = await ops(['account', 'find', 'nobody.here@example.com']);

    expect(found.accounts.map((a: { account_id: string }) => a.account_id)).toEqual([created.account_id]);
    expect(listed.accounts.map((a: { account_id: string }) => a.account_id)).toContain(created.account_id);
    expect([missing.code, missing.stderr]).toEqual([1, 'error: no account has the e-mail address nobody.here@example.com\n']);
  });

  it('says the local service is not running when its runtime file is there but nothing answers', async () => {
    const stopped = join(runtimeDir, 'stopped-runtime.json');
    const settings = JSON.parse(await readFile(runtimeFile, 'utf8'));
    await writeFile(stopped, JSON.stringify({ ...settings, dynamodb_endpoint: 'http://127.0.0.1:9' }));

    const run = await ops(['account', 'list'], { OPS_RUNTIME_FILE: stopped });

    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: the local service is not running: start it with npm start (or name a deployed one with --stack NAME)\n',
    });
  });
});

const create = (apiKey: string, flavor: string) =>
  runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'ops', flavor } });

// Each test has its own account, flavor or instance, so they run side by side.
describe.concurrent('commands', () => {
  it('quarantine refuses actions (409) until release', async ({ expect }) => {
    const { apiKey } = await runtime.newAccount();
    const { instance_id: id } = await runtime.activeInstance(apiKey, 's-2vcpu-2gb');
    const reboot = () => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body: { type: 'reboot' } });

    const quarantined = await opsJson('instance', 'quarantine', String(id));
    const refused = await reboot();
    const released = await opsJson('instance', 'release', String(id));
    const accepted = await reboot();

    expect(quarantined).toEqual({ instance_id: id, status: 'quarantined' });
    expect(refused).toMatchObject({ status: 409, body: { error: 'lifecycle conflict', status: 'quarantined' } });
    expect(released).toEqual({ instance_id: id, status: 'active' });
    expect(accepted.status).toBe(200);
    await runtime.waitForJob(apiKey, accepted.body.job_id);
  });

  it.for([
    {
      args: ['--email', 'ops@example.com', '--deposit', '50'],
      email: 'ops@example.com',
      balance: 50_000_000,
      confirmed: true,
      suspended: false,
    },
    {
      args: ['--unconfirmed', '--suspended'],
      email: expect.stringMatching(/^[0-9a-f]+@example\.com$/),
      balance: 0,
      confirmed: false,
      suspended: true,
    },
  ])(
    'account create $args opens the account with its deposit and a working session',
    async ({ args, email, balance, confirmed, suspended }, { expect }) => {
      const output = await opsJson('account', 'create', ...args);

      expect(output).toMatchObject({ email, confirmed, suspended, balance_micros: balance, balance_usd: (balance / 1e6).toFixed(2) });
      expect(await getAccount(runtime.deps, output.account_id)).toMatchObject({ email, confirmed, suspended, balance, deleted_at: null });
      const { stored, csrfHash } = await storedSession(output);
      expect(stored).toMatchObject({ account_id: output.account_id, csrf_hash: csrfHash });
    },
  );

  it('account show escapes control characters in stored names, so no name rewrites the terminal or forges a row', async ({ expect }) => {
    const { accountId } = await runtime.newAccount();
    // Stored as an older release could have stored it, before names were validated.
    await issueApiKey(runtime.deps, accountId, 'evil\u001b]0;owned\u0007\u001b[2J\n  99  forged  svcmcp_fake  true\u202e');

    const [text, json] = await Promise.all([ops(['account', 'show', accountId]), ops(['account', 'show', accountId, '--json'])]);

    for (const run of [text, json]) {
      expect(run.code).toBe(0);
      // eslint-disable-next-line no-control-regex -- no control character may reach the terminal
      expect(run.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
    }
    expect(text.stdout).toContain('evil\\u001b]0;owned\\u0007\\u001b[2J\\u000a  99  forged  svcmcp_fake  true\\u202e');
    expect(text.stdout.split('\n').filter((line) => line.includes('forged'))).toHaveLength(1);
    expect(JSON.parse(json.stdout).keys.map((key: { name: string }) => key.name)).toContain(
      'evil\u001b]0;owned\u0007\u001b[2J\n  99  forged  svcmcp_fake  true\u202e',
    );
  });

  it('session create opens a working session', async ({ expect }) => {
    const { accountId } = await runtime.newAccount();

    const output = await opsJson('session', 'create', accountId);

    expect(output).toEqual({
      account_id: accountId,
      session: expect.any(String),
      csrf_token: expect.any(String),
      expires_at: expect.any(String),
    });
    const { stored, csrfHash } = await storedSession(output);
    expect(stored).toMatchObject({ account_id: accountId, csrf_hash: csrfHash });
  });

  it('charge and deposit move the balance exactly, pausing billing at zero and lifting it; show lists it all', async ({ expect }) => {
    const { accountId, keyId } = await runtime.newAccount({ depositUsd: '10' });

    const first = await opsJson('account', 'charge', accountId, '3.33');
    const second = await opsJson('account', 'charge', accountId, '10');
    const deposited = await ops(['account', 'deposit', accountId, '5.01']);
    const shown = await opsJson('account', 'show', accountId);

    expect(first).toMatchObject({ amount_micros: 3_330_000, balance_micros: 6_670_000, balance_usd: '6.67', billing_paused: false });
    expect(second).toMatchObject({ balance_micros: -3_330_000, balance_usd: '-3.33', billing_paused: true });
    expect(deposited).toEqual({ code: 0, stdout: `${accountId}: deposited $5.01; balance $1.68\n`, stderr: '' });
    expect(await getAccount(runtime.deps, accountId)).toMatchObject({
      balance: 1_680_000,
      total_deposited: 15_010_000,
      billing_paused: false,
    });
    expect(shown).toMatchObject({
      account_id: accountId,
      balance_micros: 1_680_000,
      balance_usd: '1.68',
      billing_paused: false,
      instances: [],
    });
    expect(shown.keys).toEqual([{ id: keyId, name: 'Test', key_prefix: expect.any(String), is_active: true, last_used_at: null }]);
    expect(shown.ledger.map((e: any) => [e.kind, e.amount_micros, e.amount_usd])).toEqual([
      ['deposit', 10_000_000, '10.00'],
      ['charge', -3_330_000, '-3.33'],
      ['charge', -10_000_000, '-10.00'],
      ['deposit', 5_010_000, '5.01'],
    ]);
  });

  it.for([
    { command: 'confirm', start: { confirmed: false }, expected: { confirmed: true } },
    { command: 'suspend', start: {}, expected: { suspended: true } },
    { command: 'unsuspend', start: { suspended: true }, expected: { suspended: false } },
    { command: 'delete', start: {}, expected: { deleted_at: expect.any(String) } },
  ])('account $command flips the flag', async ({ command, start, expected }, { expect }) => {
    const { accountId } = await runtime.newAccount();
    await updateAccountFlags(runtime.deps, accountId, start);

    const output = await opsJson('account', command, accountId);

    expect(output).toMatchObject({ account_id: accountId, ...expected });
    expect(await getAccount(runtime.deps, accountId)).toMatchObject(expected);
  });

  it('capacity set --flavor bounds what create can reserve', async ({ expect }) => {
    const { apiKey } = await runtime.newAccount();

    const closed = await opsJson('capacity', 'set', '--flavor', 's-1vcpu-2gb', '--limit', '0');
    const refused = await create(apiKey, 's-1vcpu-2gb');
    await opsJson('capacity', 'set', '--flavor', 's-1vcpu-2gb', '--limit', '200');
    const accepted = await create(apiKey, 's-1vcpu-2gb');

    expect(closed).toEqual({ pool: 'tier', flavor: 's-1vcpu-2gb', limit: 0 });
    expect(refused).toMatchObject({ status: 503, body: { error: 'Tier capacity exhausted' } });
    expect(accepted.status).toBe(202);
  });

  it('capacity set --ipv4 sizes the address pool', async ({ expect }) => {
    const output = await opsJson('capacity', 'set', '--ipv4', '900');

    const shards = await capacityShardItems(runtime.deps, 'capacity#ipv4');
    const shown = await opsJson('capacity', 'show');
    await opsJson('capacity', 'set', '--ipv4', '1000');

    expect(output).toEqual({ pool: 'ipv4', limit: 900 });
    // 900 over 8 shards: four of 113 and four of 112.
    expect(shards.map((shard) => shard.limit)).toEqual([113, 113, 113, 113, 112, 112, 112, 112]);
    expect(shown.ipv4).toMatchObject({ limit: 900 });
  });

  it('capacity migrate finds nothing to move where everything was written sharded', async ({ expect }) => {
    expect(await opsJson('capacity', 'migrate')).toEqual({
      limits_moved: 0,
      limits_dropped: 0,
      instances_moved: 0,
      units_moved: 0,
      units_left: 0,
    });
  });

  it('billing review reviews the accounts due and prints what it did: a statement booked', async ({ expect }) => {
    const { apiKey, accountId } = await runtime.newAccount();
    // Not the flavor whose capacity a concurrent test closes for a moment.
    await runtime.activeInstance(apiKey, 's-2vcpu-2gb');
    const yesterday = new Date(Date.now() - (Date.now() % 86_400_000) - 3_600_000).toISOString();
    const { burning } = (await getAccount(runtime.deps, accountId))!;
    // As if it had run since 23:00 yesterday, and its review (the statement) were due.
    await runtime.deps.dynamo.send(
      new UpdateCommand({
        TableName: runtime.tableNames.accounts,
        Key: { account_id: accountId },
        UpdateExpression: 'SET burning = :burning, review_at = :due',
        ExpressionAttributeValues: {
          ':burning': Object.fromEntries(
            Object.entries(burning).map(([id, s]) => [id, { ...s, start: yesterday, billed_until: yesterday }]),
          ),
          ':due': yesterday,
        },
      }),
    );

    const report = await opsJson('billing', 'review');
    const again = await opsJson('billing', 'migrate');

    const statements = (await listLedgerEntries(runtime.deps, accountId)).filter((entry) => entry.entry_id.startsWith('statement#'));
    expect(report).toMatchObject({ moved: 0, failures: 0 });
    expect(report.reviewed).toBeGreaterThanOrEqual(1);
    expect(statements).toHaveLength(1);
    expect(statements[0]!.amount).toBe(-26_790);
    expect(again).toEqual({ moved: 0 });
  });
});
