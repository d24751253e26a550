import { spawn } from 'node:child_process';
import { access, readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import {
  createVpsClient,
  flavorValues,
  InstanceFailedError,
  JobFailedError,
  VpsApiError,
  VpsConnectionError,
  type Flavor,
  type Instance,
  type InstanceStatus,
  type VpsClient,
} from '../sdk/index';
import {
  checkedApiUrl,
  checkedContextName,
  readConfig,
  rememberSavedKey,
  requireApi,
  requireSession,
  resolveCredentials,
  saveContext,
  sameService,
  savedContext,
  savedKeyFile,
  writeConfig,
  type ResolvedCredentials,
} from './credentials';
import { runMcpBridge } from './mcp-bridge';
import { sshArguments } from './ssh';
import { completionScript, completionShells, type CompletionShell } from './completion';
import { promptHidden, promptLine } from './prompt';
import { ChildExit, InstanceLookupError, UsageError } from './errors';
import {
  billingTable,
  contextsTable,
  fieldsTable,
  flavorsTable,
  instancesTable,
  instanceTable,
  jobTable,
  jobsTable,
  keysTable,
  print,
  progress,
  withoutSecrets,
  type OutputMode,
} from './output';

interface GlobalOptions {
  context?: string;
  apiUrl?: string;
  apiKey?: string;
  session?: string;
  csrfToken?: string;
  json?: boolean;
  output?: 'table' | 'json' | 'yaml';
  format?: string;
  header?: boolean;
  color?: boolean;
  showSecrets?: boolean;
  saveKey?: string;
  wait?: boolean;
  yes?: boolean;
}

const example = (...lines: string[]) => `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;

function positiveInteger(what: string) {
  return (value: string) => {
    if (!/^[1-9][0-9]{0,14}$/.test(value)) throw new InvalidArgumentError(`${what} is a positive integer.`);
    return Number(value);
  };
}
/** An instance as the command line names it: its id, or its project name (which must then name one instance alone). */
type InstanceRef = number | string;

function instanceRef(value: string): InstanceRef {
  if (/^[0-9]+$/.test(value)) return positiveInteger('An instance id')(value);
  if (value.trim() === '') throw new InvalidArgumentError('An instance is named by its id or its project name.');
  return value;
}
const instanceIdArgument = ['<id>', 'instance id, or its project name when no other instance has it', instanceRef] as const;

/** The id of the instance `ref` names: a name is looked up, and must name exactly one of the caller's instances. */
async function instanceIdOf(vps: VpsClient, ref: InstanceRef): Promise<number> {
  if (typeof ref === 'number') return ref;
  const named = await vps.listInstances({ name: ref });
  if (named.length === 1) return named[0]!.instance_id;
  if (named.length === 0) throw new InstanceLookupError(`no instance is named ${ref}`);
  throw new InstanceLookupError(`${named.length} instances are named ${ref} (${named.map((i) => i.instance_id).join(', ')}): give the id`);
}

/** The client and the id of the instance the command names. */
async function namedInstance(command: Command, ref: InstanceRef): Promise<{ vps: VpsClient; id: number }> {
  const vps = await instanceClient(command);
  return { vps, id: await instanceIdOf(vps, ref) };
}

/** `key=value`: one label, added to those already given. */
function collectLabel(value: string, labels: Record<string, string> = {}): Record<string, string> {
  const [key, label] = labelChange(value);
  if (label === null) throw new InvalidArgumentError('A label is key=value.');
  return { ...labels, [key]: label };
}

/** `key=value` sets a label, `key-` removes it (as kubectl label does). */
function labelChange(change: string): [string, string | null] {
  const equals = change.indexOf('=');
  if (equals > 0) return [change.slice(0, equals), change.slice(equals + 1)];
  if (change.endsWith('-') && change.length > 1) return [change.slice(0, -1), null];
  throw new UsageError(`${change}: give key=value to set a label or key- to remove it`);
}

const TOP_UP_MIN_USD = 5;
const TOP_UP_MAX_USD = 1000;

/** Dollars with at most two decimals, within what one top-up may be; refused before anything is sent. */
function dollars(value: string): number {
  const amount = Number(value);
  if (!/^\d+(\.\d{1,2})?$/.test(value) || amount < TOP_UP_MIN_USD || amount > TOP_UP_MAX_USD)
    throw new InvalidArgumentError(`An amount is ${TOP_UP_MIN_USD} to ${TOP_UP_MAX_USD} dollars, with at most two decimals.`);
  return amount;
}
const flavorOption = () => new Option('--flavor <flavor>', 'flavor (see `vps flavors`)').choices(flavorValues).makeOptionMandatory();

function optionsOf(command: Command): GlobalOptions {
  return command.optsWithGlobals<GlobalOptions>();
}
const outputMode = (options: GlobalOptions): OutputMode => ({
  json: Boolean(options.json) || options.output === 'json',
  yaml: options.output === 'yaml',
  showSecrets: Boolean(options.showSecrets),
  ...(options.format ? { columns: options.format.split(',').map((column) => column.trim()) } : {}),
  header: options.header !== false,
});

/** The version of the package this CLI ships in. */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

function onRateLimited({ waitSeconds, attempt, maxAttempts }: { waitSeconds: number; attempt: number; maxAttempts: number }) {
  process.stderr.write(`Rate limit exceeded: waiting ${waitSeconds} s before retrying (${attempt} of ${maxAttempts})\n`);
}

/** The run's credentials; says so on stderr when they are the local service's demo account (from `npm start`). */
async function credentialsOf(command: Command): Promise<ResolvedCredentials> {
  const credentials = await resolveCredentials(optionsOf(command));
  if (credentials.localDemo)
    process.stderr.write(`Using the local service at ${credentials.apiUrl} and its demo account (vps auth init saves another).\n`);
  return credentials;
}

async function instanceClient(command: Command): Promise<VpsClient> {
  const { apiUrl, apiKey } = requireApi(await credentialsOf(command));
  return createVpsClient({ baseUrl: apiUrl, apiKey, onRateLimited });
}

async function sessionClient(command: Command): Promise<VpsClient> {
  const { apiUrl, session, csrfToken } = requireSession(await credentialsOf(command));
  return createVpsClient({ baseUrl: apiUrl, session, csrfToken, onRateLimited });
}

/** A secret read for this command only: the flag or variable given, a hidden prompt on a terminal, else standard input. */
async function secretInput(given: string | undefined, prompt: string): Promise<string> {
  return given ?? (process.stdin.isTTY ? await promptHidden(prompt) : (await text(process.stdin)).split('\n')[0]!.trim());
}

/**
 * Checks an API key against the URL given for it and saves both as the context `name`. Only what was given for this:
 * never a saved key or URL, nor the local service's, is sent to the URL typed here.
 */
async function verifyAndSaveKey(command: Command, name: string, use: boolean): Promise<void> {
  const options = optionsOf(command);
  const typedUrl = options.apiUrl ?? process.env.VPS_API_URL;
  if (!typedUrl) throw new UsageError('no API URL: pass --api-url or set VPS_API_URL');
  const apiUrl = checkedApiUrl(typedUrl);
  const apiKey = await secretInput(options.apiKey ?? process.env.VPS_API_KEY, 'API key: ');
  if (!apiKey) throw new UsageError('no API key: type it when asked, pipe it on standard input, or pass --api-key');
  const account = await createVpsClient({ baseUrl: apiUrl, apiKey, onRateLimited }).getAccount();
  const file = await saveContext(name, { api_url: apiUrl, api_key: apiKey }, { use });
  print(
    outputMode(options),
    { context: name, api_url: apiUrl, account_id: account.account_id, email: account.email, config_file: file },
    () => `Saved the API URL and key of ${account.email} to ${file} (mode 0600) as context ${name}.`,
  );
}

/** A private key given where the public one belongs (`--ssh-key ~/.ssh/id_ed25519`) is refused before it leaves the machine. */
function publicKeyOnly(file: string, key: string): string {
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----|^PuTTY-User-Key-File-/m.test(key)) {
    throw new UsageError(
      `${file} is a private key: give the public one (${file.endsWith('.pub') ? 'its .pub' : `${file}.pub`}); nothing was sent`,
    );
  }
  return key;
}

/**
 * A destructive command goes ahead with `--yes`, or when a person at a terminal answers yes; without a terminal to
 * ask on (a script, a pipe) it is refused before anything is sent.
 */
async function confirmed(command: Command, question: string): Promise<void> {
  if (optionsOf(command).yes) return;
  if (!process.stdin.isTTY || !process.stderr.isTTY)
    throw new UsageError(`${question.split('?')[0]}: confirm with --yes (no terminal to ask on); nothing was sent`);
  if (!/^y(es)?$/i.test(await promptLine(`${question} Type yes to go on: `))) throw new UsageError('not confirmed; nothing was sent');
}

const fileExists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/** Refuses, before anything is sent, a --save-key file that exists: the key could then be saved nowhere. */
async function assertNewFile(file: string | undefined): Promise<void> {
  if (!file) return;
  const exists = await fileExists(file);
  if (exists) throw new UsageError(`${file} exists; not overwriting it`);
}

/** Writes a generated private key for the user alone; never over an existing file. */
async function saveKey(vps: VpsClient, instance: Instance, file: string | undefined): Promise<string | undefined> {
  if (!file) return undefined;
  if (instance.ssh_key.private_key === null)
    throw new UsageError('--save-key: this instance has no private key from the service (its public key was supplied)');
  await writeFile(file, instance.ssh_key.private_key.endsWith('\n') ? instance.ssh_key.private_key : `${instance.ssh_key.private_key}\n`, {
    mode: 0o600,
    flag: 'wx',
  });
  await rememberSavedKey(vps.baseUrl, instance.instance_id, resolve(file));
  return file;
}

/** Runs ssh on this terminal and ends with its exit code. */
async function runSsh(args: readonly string[]): Promise<never> {
  const child = spawn('ssh', args, { stdio: 'inherit' });
  const code = await new Promise<number>((done, fail) => {
    child.on('error', (error: NodeJS.ErrnoException) =>
      fail(error.code === 'ENOENT' ? new Error('ssh is not installed here: install the OpenSSH client') : error),
    );
    child.on('close', (exitCode, signal) => done(exitCode ?? (signal ? 128 : 1)));
  });
  throw new ChildExit(code);
}

async function waitShowing<T>(what: string, wait: (onStatus: (status: string) => void) => Promise<T>): Promise<T> {
  const shown = progress(what);
  try {
    const result = await wait(shown.status);
    shown.stop(true);
    return result;
  } catch (error) {
    shown.stop(false);
    throw error;
  }
}

const waitForInstance = (vps: VpsClient, id: number, statuses: InstanceStatus[]) =>
  waitShowing(`instance ${id}`, (onStatus) => vps.waitForInstance(id, statuses, { onStatus }));
const waitForJob = (vps: VpsClient, jobId: string, what: string) => waitShowing(what, (onStatus) => vps.waitForJob(jobId, { onStatus }));

function printInstance(options: GlobalOptions, instance: Instance, savedKeyFile?: string) {
  const mode = outputMode(options);
  print(mode, withoutSecrets(instance, mode), () => instanceTable(instance, mode, savedKeyFile));
}

function buildProgram(): Command {
  const program = new Command('vps')
    .description('Deploy and manage Ubuntu 24.04 servers on the VPS Provisioning Service.')
    .exitOverride()
    .showHelpAfterError('(add --help for usage and an example)')
    .option('--context <name>', 'the saved context to use (else VPS_CONTEXT, else the one in use)')
    .option('--api-url <url>', 'service URL (else VPS_API_URL, the context, or the local service)')
    .option('--api-key <key>', 'API key (else VPS_API_KEY, the context, or the local service)')
    .option('--json', 'print one JSON document on stdout instead of a table (as -o json)')
    .addOption(new Option('-o, --output <format>', 'table, json or yaml').choices(['table', 'json', 'yaml']).default('table'))
    .option('--format <columns>', 'the columns of a list to print, by heading, comma-separated (ID,IPV4)')
    .option('--no-header', 'print a list without its headings')
    .option('--no-color', 'no colour (as NO_COLOR=1 does)')
    .version(packageVersion(), '-V, --version', 'print the version')
    .hook('preAction', (command) => {
      if (command.opts<GlobalOptions>().color === false) process.env.NO_COLOR = '1';
    })
    .addHelpText(
      'after',
      example(
        'vps instances create --name web --flavor s-1vcpu-2gb --wait',
        'vps instances list -o json',
        'vps instances list --format ID,IPV4 --no-header',
      ),
    );

  const instances = program
    .command('instances')
    .description('deploy, list, act on and delete servers')
    .addHelpText('after', example('vps instances list'));

  instances
    .command('list')
    .description('list your instances')
    .option('--show-secrets', 'include root passwords')
    .option('-l, --selector <selector>', 'only instances whose labels match (env=prod,tier!=db,gpu,!legacy)')
    .option('--status <statuses>', 'only instances in these statuses (active,stopped)')
    .option('--name <name>', 'only instances with this project name')
    .addHelpText('after', example('vps instances list', 'vps instances list -l env=prod --status active', 'vps instances list --json'))
    .action(async (filters: { selector?: string; status?: string; name?: string }, command: Command) => {
      const options = optionsOf(command);
      const mode = outputMode(options);
      const list = await (
        await instanceClient(command)
      ).listInstances({
        ...(filters.selector === undefined ? {} : { label_selector: filters.selector }),
        ...(filters.status === undefined ? {} : { status: filters.status }),
        ...(filters.name === undefined ? {} : { name: filters.name }),
      });
      print(
        mode,
        list.map((instance) => withoutSecrets(instance, mode)),
        () => instancesTable(list, mode),
      );
    });

  instances
    .command('get')
    .description('show one instance with its connection details')
    .argument(...instanceIdArgument)
    .option('--show-secrets', 'print the root password and private key')
    .option('--save-key <file>', 'write the generated private key to FILE (mode 0600)')
    .addHelpText('after', example('vps instances get 42', 'vps instances get 42 --save-key ~/.ssh/vps-42'))
    .action(async (ref: InstanceRef, _options, command: Command) => {
      const options = optionsOf(command);
      await assertNewFile(options.saveKey);
      const { vps, id } = await namedInstance(command, ref);
      const instance = await vps.getInstance(id);
      printInstance(options, instance, await saveKey(vps, instance, options.saveKey));
    });

  instances
    .command('create')
    .description('deploy a server (about 20 s to active)')
    .requiredOption('--name <name>', 'project name (at most 64 characters)')
    .addOption(flavorOption())
    .option('--ssh-key <file>', 'your SSH public key file; without it a key pair is generated')
    .option('--user-data-file <file>', 'cloud-init user data (#cloud-config or a script, at most 64 KiB) run at first boot')
    .option('--label <key=value>', 'a label (repeatable)', collectLabel)
    .option('--wait', 'wait until the instance is active (answering SSH)')
    .option('--show-secrets', 'print the root password and private key')
    .option('--save-key <file>', 'write the generated private key to FILE (mode 0600)')
    .addHelpText('after', example('vps instances create --name web --flavor s-1vcpu-2gb --ssh-key ~/.ssh/id_ed25519.pub --wait'))
    .action(
      async (
        options: { name: string; flavor: Flavor; sshKey?: string; userDataFile?: string; label?: Record<string, string> },
        command: Command,
      ) => {
        const global = optionsOf(command);
        const sshPublicKey =
          options.sshKey === undefined ? undefined : publicKeyOnly(options.sshKey, (await readFile(options.sshKey, 'utf8')).trim());
        const userData = options.userDataFile === undefined ? undefined : await readFile(options.userDataFile, 'utf8');
        if (sshPublicKey && global.saveKey) throw new UsageError('--save-key saves a generated key pair; with --ssh-key there is none');
        await assertNewFile(global.saveKey);
        const vps = await instanceClient(command);
        const created = await vps.createInstance({
          project_name: options.name,
          flavor: options.flavor,
          ...(sshPublicKey ? { ssh_public_key: sshPublicKey } : {}),
          ...(userData === undefined ? {} : { user_data: userData }),
          ...(options.label ? { labels: options.label } : {}),
        });
        // Saved before waiting: the key is in this response and must not be lost if the wait is interrupted.
        const savedKeyFile = await saveKey(vps, created, global.saveKey);
        const instance = global.wait ? await waitForInstance(vps, created.instance_id, ['active']) : created;
        printInstance(global, instance, savedKeyFile);
      },
    );

  instances
    .command('rename')
    .description("change an instance's project name")
    .argument(...instanceIdArgument)
    .argument('<name>', 'the new project name')
    .addHelpText('after', example('vps instances rename 42 api'))
    .action(async (ref: InstanceRef, name: string, _options, command: Command) => {
      const { vps, id } = await namedInstance(command, ref);
      const instance = await vps.updateInstance(id, { project_name: name });
      printInstance(optionsOf(command), instance, undefined);
    });

  instances
    .command('label')
    .description('set labels (key=value) or remove them (key-) on an instance')
    .argument(...instanceIdArgument)
    .argument('<changes...>', 'key=value to set, key- to remove')
    .addHelpText('after', example('vps instances label 42 env=prod tier-'))
    .action(async (ref: InstanceRef, changes: string[], _options, command: Command) => {
      const labels = Object.fromEntries(changes.map(labelChange));
      const { vps, id } = await namedInstance(command, ref);
      const instance = await vps.updateInstance(id, { labels });
      printInstance(optionsOf(command), instance, undefined);
    });

  instances
    .command('delete')
    .description('delete an instance (gone from the API at once, destroyed in the background)')
    .argument(...instanceIdArgument)
    .option('--wait', 'wait until the server is destroyed')
    .option('-y, --yes', 'delete without asking')
    .addHelpText('after', example('vps instances delete 42 --wait', 'vps instances delete web --yes'))
    .action(async (ref: InstanceRef, _options, command: Command) => {
      const options = optionsOf(command);
      await confirmed(command, `Delete instance ${ref}? The server and its disk are destroyed.`);
      const { vps, id } = await namedInstance(command, ref);
      const deleted = await vps.deleteInstance(id);
      if (options.wait && deleted.job_id) {
        const job = await waitForJob(vps, deleted.job_id, `delete ${id}`);
        print(outputMode(options), job, () => jobTable(job));
        return;
      }
      print(outputMode(options), deleted, () =>
        fieldsTable({ Instance: deleted.instance_id, Status: deleted.status, Job: deleted.job_id }),
      );
    });

  const actions = [
    { name: 'power-on', description: 'start a stopped instance', run: (vps: VpsClient, id: number) => vps.powerOn(id) },
    {
      name: 'power-off',
      description: 'shut an instance down (billed at 25 % while stopped)',
      run: (vps: VpsClient, id: number) => vps.powerOff(id),
    },
    { name: 'reboot', description: 'restart a running instance', run: (vps: VpsClient, id: number) => vps.reboot(id) },
  ];
  for (const action of actions) {
    instances
      .command(action.name)
      .description(action.description)
      .argument(...instanceIdArgument)
      .option('--wait', 'wait until the action has finished')
      .option('--show-secrets', 'with --wait: print the root password and private key')
      .addHelpText('after', example(`vps instances ${action.name} 42 --wait`))
      .action(async (ref: InstanceRef, _options, command: Command) => runAction(command, ref, action.name, action.run));
  }

  instances
    .command('resize')
    .description('move an instance to another flavor (the disk can only grow)')
    .argument(...instanceIdArgument)
    .addOption(flavorOption())
    .option('--wait', 'wait until the resize has finished')
    .option('--show-secrets', 'with --wait: print the root password and private key')
    .addHelpText('after', example('vps instances resize 42 --flavor s-2vcpu-4gb --wait'))
    .action(async (ref: InstanceRef, options: { flavor: Flavor }, command: Command) =>
      runAction(command, ref, 'resize', (vps, id) => vps.resize(id, options.flavor)),
    );

  instances
    .command('wait')
    .description('wait until an instance is active (SSH answers) or stopped, or its job has ended')
    .argument(...instanceIdArgument)
    .addOption(new Option('--until <status>', 'the status to wait for').choices(['active', 'stopped']).default('active'))
    .option('--show-secrets', 'print the root password and private key')
    .addHelpText('after', example('vps instances wait web --until active'))
    .action(async (ref: InstanceRef, options: { until: 'active' | 'stopped' }, command: Command) => {
      const { vps, id } = await namedInstance(command, ref);
      printInstance(optionsOf(command), await waitForInstance(vps, id, [options.until]));
    });

  program
    .command('ssh')
    .description('open an SSH session to an instance as root: with the key --save-key wrote for it, else your SSH agent and keys')
    .argument(...instanceIdArgument)
    .argument('[ssh-args...]', 'more arguments for ssh (after --), such as a command to run')
    .option('-i, --identity <file>', 'the private key to use')
    .addHelpText('after', example('vps ssh web', 'vps ssh 42 -- uptime', 'vps ssh web -i ~/.ssh/vps-42'))
    .action(async (ref: InstanceRef, sshArgs: string[], options: { identity?: string }, command: Command) => {
      const { vps, id } = await namedInstance(command, ref);
      const instance = await vps.getInstance(id);
      if (instance.status !== 'active' || instance.ipv4 === null)
        throw new InstanceLookupError(`instance ${id} is ${instance.status}: SSH answers once it is active`);
      const saved = await savedKeyFile(vps.baseUrl, id);
      const savedExists = saved !== undefined && (await fileExists(saved));
      const identity = options.identity ?? (savedExists ? saved : undefined);
      await runSsh(sshArguments({ user: instance.root_user, address: instance.ipv4, port: instance.ssh_port }, identity, sshArgs));
    });

  const jobs = program
    .command('jobs')
    .description('follow provisions, actions and deletes')
    .addHelpText('after', example('vps jobs list web', 'vps jobs get 1b4e28ba-2fa1-11d2-883f-0016d3cca427'));

  jobs
    .command('list')
    .description("an instance's latest jobs, newest first")
    .argument(...instanceIdArgument)
    .addHelpText('after', example('vps jobs list web', 'vps jobs list 42 -o json'))
    .action(async (ref: InstanceRef, _options, command: Command) => {
      const { vps, id } = await namedInstance(command, ref);
      const list = await vps.listInstanceJobs(id);
      const mode = outputMode(optionsOf(command));
      print(mode, list, () => jobsTable(list, mode));
    });

  jobs
    .command('get')
    .description('show a job')
    .argument('<id>', 'job id')
    .addHelpText('after', example('vps jobs get 1b4e28ba-2fa1-11d2-883f-0016d3cca427 --json'))
    .action(async (id: string, _options, command: Command) => {
      const job = await (await instanceClient(command)).getJob(id);
      print(outputMode(optionsOf(command)), job, () => jobTable(job));
    });

  program
    .command('balance')
    .description('your balance, what your servers cost an hour, and how long the money lasts')
    .addHelpText('after', example('vps balance', 'vps balance --json'))
    .action(async (_options, command: Command) => {
      const billing = await (await instanceClient(command)).getBilling();
      print(outputMode(optionsOf(command)), billing, () => billingTable(billing));
    });

  program
    .command('mcp')
    .description('serve the MCP tools on stdin and stdout, for AI clients that start servers as processes (uses your API key)')
    .addHelpText('after', example('vps mcp'))
    .action(async (_options, command: Command) => {
      const { apiUrl, apiKey } = requireApi(await credentialsOf(command));
      await runMcpBridge(apiUrl, apiKey);
    });

  program
    .command('top-up')
    .description('add funds by card: prints the checkout page to pay on; --wait waits until the balance is credited')
    .argument('<amount>', `dollars to add (${TOP_UP_MIN_USD} to ${TOP_UP_MAX_USD}, whole cents)`, dollars)
    .option('--wait', 'wait until the payment is confirmed and the balance credited')
    .option('--save-card', 'keep the card for auto-recharge')
    .addHelpText('after', example('vps top-up 20 --wait'))
    .action(async (amount: number, options: { saveCard?: boolean }, command: Command) => {
      const global = optionsOf(command);
      const vps = await instanceClient(command);
      const opened = await vps.createTopUp(amount, { saveCard: options.saveCard });
      if (!global.wait) {
        print(outputMode(global), opened, () => `Open this page to pay $${opened.amount_usd}:\n${opened.checkout_url ?? ''}`);
        return;
      }
      process.stderr.write(`Open this page to pay $${opened.amount_usd}:\n${opened.checkout_url ?? ''}\n`);
      const paid = await waitShowing(`top-up ${opened.top_up_id}`, (onStatus) => vps.waitForTopUp(opened.top_up_id, { onStatus }));
      const billing = await vps.getBilling();
      print(outputMode(global), paid, () => `$${paid.amount_usd} added. Balance: $${billing.balance_usd}.`);
    });

  program
    .command('flavors')
    .description('the flavors you can deploy, with their plans and prices')
    .addHelpText('after', example('vps flavors'))
    .action(async (_options, command: Command) => {
      const { apiUrl } = await credentialsOf(command);
      if (!apiUrl) throw new UsageError('no API URL: pass --api-url or set VPS_API_URL');
      const flavors = await createVpsClient({ baseUrl: apiUrl, onRateLimited }).flavors();
      const mode = outputMode(optionsOf(command));
      print(mode, flavors, () => flavorsTable(flavors, mode));
    });

  const keys = program
    .command('keys')
    .description('manage API keys (needs a signed-in session and its CSRF token)')
    .option('--session <token>', 'session cookie value (else VPS_SESSION)')
    .option('--csrf-token <token>', "the session's CSRF token (else VPS_CSRF_TOKEN)")
    .addHelpText('after', example('VPS_SESSION=… VPS_CSRF_TOKEN=… vps keys list'));

  keys
    .command('list')
    .description('list your API keys, revoked ones included')
    .addHelpText('after', example('vps keys list'))
    .action(async (_options, command: Command) => {
      const list = await (await sessionClient(command)).listKeys();
      const mode = outputMode(optionsOf(command));
      print(mode, list, () => keysTable(list, mode));
    });

  keys
    .command('create')
    .description('create an API key; the full key is shown this once')
    .option('--name <name>', 'key name (default "Default")')
    .addHelpText('after', example('vps keys create --name ci'))
    .action(async (options: { name?: string }, command: Command) => {
      const created = await (await sessionClient(command)).createKey(options.name);
      process.stderr.write('This is the only time the full key is shown: store it now.\n');
      print(outputMode(optionsOf(command)), created, () =>
        fieldsTable({ ID: created.id, Name: created.name, Prefix: created.key_prefix, Key: created.full_key, Created: created.created_at }),
      );
    });

  keys
    .command('revoke')
    .description('revoke an API key at once and for good')
    .argument('<id>', 'key id', positiveInteger('A key id'))
    .option('-y, --yes', 'revoke without asking')
    .addHelpText('after', example('vps keys revoke 3 --yes'))
    .action(async (id: number, _options, command: Command) => {
      await confirmed(command, `Revoke key ${id}? Requests with it are refused at once, for good.`);
      const revoked = await (await sessionClient(command)).revokeKey(id);
      print(outputMode(optionsOf(command)), revoked, () => `Key ${revoked.id} revoked.`);
    });

  program
    .command('auth')
    .description('save credentials for later runs')
    .addHelpText('after', example('vps auth init --api-url https://api.example.com < key.txt'))
    .command('init')
    .description(
      'check an API key against the service and save it with the URL as a context (--context, else the one in use, else "default"), readable by you alone; the key is read from --api-key, VPS_API_KEY, a hidden prompt, or standard input',
    )
    .addHelpText('after', example('vps auth init --api-url https://api.example.com < key.txt'))
    .action(async (_options, command: Command) => {
      const options = optionsOf(command);
      const name = options.context === undefined ? ((await readConfig()).current ?? 'default') : checkedContextName(options.context);
      await verifyAndSaveKey(command, name, false);
    });

  const contexts = program
    .command('context')
    .description('saved credentials for several accounts or services; --context NAME (or VPS_CONTEXT) picks one for a run')
    .addHelpText('after', example('vps context create prod --api-url https://api.example.com < key.txt', 'vps context use prod'));

  contexts
    .command('create')
    .description('check an API key and save it with the URL as a new context, then use it (key as for auth init)')
    .argument('<name>', 'context name', checkedContextName)
    .addHelpText('after', example('vps context create staging --api-url https://staging.example.com < key.txt'))
    .action(async (name: string, _options, command: Command) => {
      if ((await readConfig()).contexts[name])
        throw new UsageError(`context ${name} exists; vps auth init --context ${name} replaces its key`);
      await verifyAndSaveKey(command, name, true);
    });

  contexts
    .command('use')
    .description('make a saved context the one every later run uses')
    .argument('<name>', 'context name')
    .addHelpText('after', example('vps context use prod'))
    .action(async (name: string, _options, command: Command) => {
      const config = await readConfig();
      const context = savedContext(config, name);
      await writeConfig({ ...config, current: name });
      print(
        outputMode(optionsOf(command)),
        { context: name, api_url: context.api_url },
        () => `Using context ${name} (${context.api_url}).`,
      );
    });

  contexts
    .command('list')
    .description('the saved contexts, the one in use marked *')
    .addHelpText('after', example('vps context list'))
    .action(async (_options, command: Command) => {
      const config = await readConfig();
      const rows = Object.entries(config.contexts).map(([name, context]) => ({
        name,
        current: name === config.current,
        api_url: context.api_url,
        key_prefix: context.api_key === undefined ? null : `${context.api_key.slice(0, 12)}…`,
        session_expires_at: context.session === undefined ? null : (context.session_expires_at ?? null),
      }));
      const mode = outputMode(optionsOf(command));
      print(mode, rows, () => contextsTable(rows, mode));
    });

  contexts
    .command('delete')
    .description('forget a saved context (its key stays valid at the service: revoke it there)')
    .argument('<name>', 'context name')
    .addHelpText('after', example('vps context delete staging'))
    .action(async (name: string, _options, command: Command) => {
      const config = await readConfig();
      savedContext(config, name);
      const { [name]: _deleted, ...rest } = config.contexts;
      await writeConfig({ ...config, current: config.current === name ? null : config.current, contexts: rest });
      print(outputMode(optionsOf(command)), { deleted: name }, () => `Context ${name} deleted.`);
    });

  program
    .command('whoami')
    .description('the account, key and service this run uses')
    .addHelpText('after', example('vps whoami', 'vps whoami --context prod'))
    .action(async (_options, command: Command) => {
      const credentials = await credentialsOf(command);
      const { apiUrl, apiKey } = requireApi(credentials);
      const account = await createVpsClient({ baseUrl: apiUrl, apiKey, onRateLimited }).getAccount();
      const who = {
        account_id: account.account_id,
        email: account.email,
        key_prefix: apiKey.slice(0, 12),
        api_url: apiUrl,
        context: credentials.context ?? null,
      };
      print(outputMode(optionsOf(command)), who, () =>
        fieldsTable({
          Account: who.account_id,
          'E-mail': who.email,
          Key: `${who.key_prefix}…`,
          'API URL': who.api_url,
          Context: who.context,
        }),
      );
    });

  program
    .command('login')
    .description(
      'sign in with your e-mail address and password, keeping the session in the context (mode 0600) so that vps keys works; the password is read from a hidden prompt or standard input',
    )
    .requiredOption('--email <address>', "the account's e-mail address")
    .addHelpText('after', example('vps login --email me@example.com', 'vps keys list'))
    .action(async (options: { email: string }, command: Command) => {
      const global = optionsOf(command);
      const config = await readConfig();
      const name = global.context === undefined ? (config.current ?? 'default') : checkedContextName(global.context);
      const previous = config.contexts[name];
      const givenUrl = global.apiUrl ?? process.env.VPS_API_URL ?? previous?.api_url;
      if (!givenUrl) throw new UsageError('no API URL: pass --api-url or set VPS_API_URL');
      const apiUrl = checkedApiUrl(givenUrl);
      const password = await secretInput(undefined, 'Password: ');
      if (!password) throw new UsageError('no password: type it when asked or pipe it on standard input');
      const signedIn = await createVpsClient({ baseUrl: apiUrl, onRateLimited }).signIn(options.email, password);
      // The context keeps its key only if it is for this URL: a key is only ever sent to the URL it was saved for.
      const file = await saveContext(name, {
        api_url: apiUrl,
        session: signedIn.session,
        csrf_token: signedIn.csrf_token,
        session_expires_at: signedIn.expires_at,
      });
      if (previous?.api_key !== undefined && !sameService(previous.api_url, apiUrl))
        process.stderr.write(
          `The key context ${name} held was for ${previous.api_url} and is not kept: vps auth init --context ${name} saves one for ${apiUrl}.\n`,
        );
      print(
        outputMode(global),
        { context: name, email: signedIn.email, expires_at: signedIn.expires_at, config_file: file },
        () => `Signed in as ${signedIn.email} until ${signedIn.expires_at}; the session is kept in ${file} (mode 0600), context ${name}.`,
      );
    });

  program
    .command('completion')
    .description('print the shell completion script for bash, zsh or fish')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(completionShells))
    .addHelpText(
      'after',
      example(
        'source <(vps completion bash)    # in ~/.bashrc',
        'source <(vps completion zsh)     # in ~/.zshrc',
        'vps completion fish > ~/.config/fish/completions/vps.fish',
      ),
    )
    .action((shell: CompletionShell) => {
      process.stdout.write(completionScript(program, shell));
    });

  return program;
}

async function runAction(
  command: Command,
  ref: InstanceRef,
  name: string,
  start: (vps: VpsClient, id: number) => Promise<{ ok: boolean; action: string; job_id: string | null }>,
) {
  const options = optionsOf(command);
  const { vps, id } = await namedInstance(command, ref);
  const started = await start(vps, id);
  if (!options.wait || !started.job_id) {
    print(outputMode(options), started, () => fieldsTable({ Action: started.action, Job: started.job_id }));
    return;
  }
  await waitForJob(vps, started.job_id, `${name} ${id}`);
  printInstance(options, await vps.getInstance(id));
}

/** One line on stderr for a failure, and the exit code: 1 for the service or a job, 2 for the way it was called. */
function failure(error: unknown, apiUrl: string | undefined): { message: string; code: number } {
  if (error instanceof ChildExit) return { message: '', code: error.code };
  if (error instanceof UsageError) return { message: error.message, code: 2 };
  if (error instanceof VpsApiError) {
    const wait = error.retryAfter === undefined ? '' : `; retry after ${error.retryAfter} s`;
    const explained = error.explanation ? `${error.error}: ${error.explanation}` : error.error;
    return { message: `${explained} (HTTP ${error.status}${error.requestId ? `, request id ${error.requestId}` : ''}${wait})`, code: 1 };
  }
  if (error instanceof JobFailedError || error instanceof InstanceFailedError) return { message: error.message, code: 1 };
  if (error instanceof Error && (error as NodeJS.ErrnoException).code === 'ENOENT')
    return { message: `no such file: ${(error as NodeJS.ErrnoException).path}`, code: 2 };
  if (error instanceof VpsConnectionError) return { message: error.message, code: 1 };
  if (error instanceof TypeError && error.message === 'fetch failed')
    return { message: `cannot reach the service at ${apiUrl ?? 'its URL'}`, code: 1 };
  return { message: error instanceof Error ? error.message : String(error), code: 1 };
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    // Commander has already printed its own message (or the help).
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    const apiUrl = await resolveCredentials(program.opts()).then(
      (credentials) => credentials.apiUrl,
      () => undefined,
    );
    const { message, code } = failure(error, apiUrl);
    if (message !== '') process.stderr.write(`error: ${message}\n`);
    return code;
  }
}

process.exitCode = await main(process.argv);
