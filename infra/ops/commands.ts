import { balanceAt } from '../../shared/model/burn';
import type { Deps } from '../../shared/domain/deps';
import { randomBytes } from 'node:crypto';
import { microsToUsd, openAccount, openSession, usdToMicros } from '../../shared/domain/accounts';
import { charge, deposit, moveLegacyMetered, reviewDueAccounts } from '../../shared/domain/billing';
import { catalog, flavorIds } from '../../shared/model/flavors';
import { quarantineInstance, releaseInstance } from '../../shared/domain/lifecycle';
import { audit, capacityOverview, moveCapacityToShards } from '../../shared/domain/audit';
import { reconcile } from '../../shared/domain/reconciler';
import { orphanOverview } from '../../shared/domain/fleet-sweep';
import { spareOrphan } from '../../shared/store/orphans';
import { resumeSweepGuard } from '../../shared/domain/server-guard';
import { getAccount, scanAccounts, updateAccountFlags, type Account, type AccountFlags } from '../../shared/store/accounts';
import { listAccountApiKeys } from '../../shared/store/api-keys';
import { setCapacityLimit } from '../../shared/store/counters';
import { type CapacityPool } from '../../shared/model/capacity';
import { getInstanceItem, listOwnedInstances } from '../../shared/store/instances';
import { type Instance } from '../../shared/model/instance';
import { listLedgerEntries } from '../../shared/store/ledger';
import { escapeUnsafeCharacters } from '../../shared/model/text';
import { eventLine, tailEvents } from './events-tail';
import { renderFields, renderTable } from '../../clients/cli/table';

/** Wrong arguments: nothing was changed (exit code 2). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The options commands take, besides the global --json and --stack: those with a value name it. */
export const commandOptions = {
  email: { value: 'E' },
  deposit: { value: 'USD' },
  unconfirmed: {},
  suspended: {},
  ipv4: { value: 'N' },
  flavor: { value: 'F' },
  limit: { value: 'N' },
  grace: { value: 'SECONDS' },
  account: { value: 'ID' },
} as const satisfies Record<string, { value?: string }>;

type OptionName = keyof typeof commandOptions;
export type Options = { [K in OptionName]?: (typeof commandOptions)[K] extends { value: string } ? string : boolean };

interface Output {
  readonly json: Record<string, unknown>;
  readonly text: string;
  /** 1 when the command found something wrong (audit); 0 by default. */
  readonly exitCode?: number;
}

/** How a command runs: `dryRun` checks and says what it would change, and changes nothing. */
interface RunMode {
  readonly dryRun: boolean;
}

/** What a command does once its arguments are valid; it may still refuse (UsageError) before changing anything. */
export type Action = (deps: Deps, mode?: RunMode) => Promise<Output>;

/** A command's answer to --dry-run: what it would do, nothing changed. */
const dryRun = (json: Record<string, unknown>, text: string): Output => ({
  json: { ...json, dry_run: true },
  text: `${text} (dry run: nothing changed)`,
});

/** A refusal after looking (the service answered): exit code 1, nothing was changed. */
class RefusedError extends Error {
  override readonly name = 'RefusedError';
}

export interface Command<A extends string = string> {
  /** Positional arguments, by name. */
  readonly args: readonly A[];
  readonly options?: readonly OptionName[];
  /** How the options are given, for help. */
  readonly synopsis?: string;
  readonly summary: string;
  /**
   * A change hard to take back: on a terminal the command asks first (`--yes` skips the question; without a terminal
   * it runs, for scripts), and `--dry-run` says what it would do. The question, from the arguments.
   */
  readonly confirm?: (args: Readonly<Record<string, string>>, options: Options) => string;
  /** Checks the arguments without reaching the service, so that nothing runs unless all of them are valid. */
  prepare(args: Record<A, string>, options: Options): Action;
}

const command = <const A extends string>(definition: Command<A>): Command => definition;

// Arguments

function usd(text: string): number {
  try {
    return usdToMicros(text);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function positiveUsd(text: string): number {
  const micros = usd(text);
  if (micros === 0) throw new UsageError('the amount must be more than 0');
  return micros;
}

function nonNegativeInteger(text: string, what: string): number {
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value)) throw new UsageError(`${what} must be a whole number, not ${text}`);
  return value;
}

function instanceIdArg(text: string): number {
  const id = nonNegativeInteger(text, 'an instance id');
  if (id === 0) throw new UsageError('an instance id must be a whole number from 1');
  return id;
}

function flavorArg(flavor: string): string {
  if (!catalog.has(flavor)) throw new UsageError(`unknown flavor ${flavor}; one of ${flavorIds.join(', ')}`);
  return flavor;
}

function emailArg(email: string | undefined): string {
  if (email === undefined) return `${randomBytes(6).toString('hex')}@example.com`;
  if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw new UsageError(`not an email address: ${email}`);
  return email;
}

// Lookups made before any change

async function existingAccount(deps: Deps, accountId: string): Promise<Account> {
  const account = await getAccount(deps, accountId);
  if (!account) throw new UsageError(`no account ${accountId}`);
  return account;
}

async function requireLiveInstance(deps: Deps, instanceId: number): Promise<void> {
  const instance = await getInstanceItem(deps, instanceId);
  if (!instance || instance.deleted_at !== null) throw new UsageError(`no instance ${instanceId}`);
}

// Output

/** An amount for people: `$12.34`, `-$1.00`. */
const dollars = (micros: number) => (microsToUsd(micros).startsWith('-') ? `-$${microsToUsd(-micros)}` : `$${microsToUsd(micros)}`);

/** An amount both ways: `<name>_usd` to read, `<name>_micros` exact. */
const money = <N extends string>(name: N, micros: number) =>
  ({ [`${name}_usd`]: microsToUsd(micros), [`${name}_micros`]: micros }) as Record<`${N}_usd`, string> & Record<`${N}_micros`, number>;

/** The balance at this moment: the settled balance less what the account's servers have cost since (its checkpoint). */
const balanceNow = (account: Account) => balanceAt(account, Date.now());

const accountView = (account: Account) => ({
  account_id: account.account_id,
  email: account.email,
  confirmed: account.confirmed,
  suspended: account.suspended,
  deleted_at: account.deleted_at,
  billing_paused: account.billing_paused,
  ...money('balance', balanceNow(account)),
  ...money('total_deposited', account.total_deposited),
  created_at: account.created_at,
});

/** An account in a list: who, standing and balance. */
const accountRow = (view: ReturnType<typeof accountView>) => ({
  account_id: view.account_id,
  email: view.email,
  standing: view.deleted_at ? 'deleted' : view.suspended ? 'suspended' : view.confirmed ? 'confirmed' : 'unconfirmed',
  balance: view.balance_usd,
  billing_paused: view.billing_paused,
  created_at: view.created_at,
});

/** A value as printed: stored names may predate validation, so nothing in them may drive the terminal. */
const shown = (value: unknown) => (value === null || value === undefined ? '-' : escapeUnsafeCharacters(String(value)));

/** `name  value` lines, aligned. */
function fields(record: Readonly<Record<string, unknown>>): string {
  return renderFields(
    Object.entries(record).map(([key, value]) => [key, shown(value)] as const),
    { style: 'plain' },
  );
}

/** Rows under a heading, in aligned columns named after the first row's fields. */
function table(heading: string, rows: readonly Readonly<Record<string, unknown>>[]): string {
  const columns = Object.keys(rows[0] ?? {});
  if (columns.length === 0) return `${heading}: none`;
  const cells = rows.map((row) => columns.map((column) => shown(row[column])));
  return `${heading}:\n${renderTable(columns, cells, { style: 'plain', indent: '  ' })}`;
}

// Commands

const LEDGER_ENTRIES_SHOWN = 20;

/** A deposit or a charge: the account must exist; prints the account with the amount moved. */
function moneyCommand(
  summary: string,
  verb: string,
  sign: 1 | -1,
  move: (deps: Deps, accountId: string, micros: number) => Promise<Account>,
  confirm?: Command['confirm'],
): Command {
  return command({
    args: ['id', 'usd'],
    summary,
    ...(confirm ? { confirm } : {}),
    prepare: ({ id, usd: amount }) => {
      const micros = positiveUsd(amount);
      return async (deps, mode) => {
        const before = await existingAccount(deps, id);
        if (mode?.dryRun) {
          const after = balanceNow(before) + sign * micros;
          return dryRun(
            { ...accountView(before), ...money('amount', micros), ...money('balance_after', after) },
            `${id}: would be ${verb} ${dollars(micros)}; balance ${dollars(balanceNow(before))} → ${dollars(after)}${after <= 0 ? ' (billing paused: running servers powered off)' : ''}`,
          );
        }
        const account = await move(deps, id, micros);
        return {
          json: { ...accountView(account), ...money('amount', micros) },
          text: `${id}: ${verb} ${dollars(micros)}; balance ${dollars(balanceNow(account))}${account.billing_paused ? ' (billing paused)' : ''}`,
        };
      };
    },
  });
}

/** An operator change to an account's standing; prints the account as it is afterwards. */
function flagCommand(
  summary: string,
  verb: string,
  flags: () => AccountFlags,
  { confirm, check }: { confirm?: Command['confirm']; check?: (deps: Deps, account: Account) => Promise<void> } = {},
): Command {
  return command({
    args: ['id'],
    summary,
    ...(confirm ? { confirm } : {}),
    prepare:
      ({ id }) =>
      async (deps, mode) => {
        if (check || mode?.dryRun) {
          const before = await existingAccount(deps, id);
          await check?.(deps, before);
          if (mode?.dryRun) return dryRun(accountView(before), `${id}: would be ${verb}`);
        }
        // A conditional update: a missing account is refused, not created.
        if (!(await updateAccountFlags(deps, id, flags()))) throw new UsageError(`no account ${id}`);
        const account = await existingAccount(deps, id);
        return { json: accountView(account), text: `${id}: ${verb}` };
      },
  });
}

/** Quarantine or release: prints the instance's status afterwards. */
function instanceCommand(summary: string, apply: (deps: Deps, instanceId: number) => Promise<Instance>): Command {
  return command({
    args: ['id'],
    summary,
    prepare: ({ id }) => {
      const instanceId = instanceIdArg(id);
      return async (deps) => {
        await requireLiveInstance(deps, instanceId);
        const { status } = await apply(deps, instanceId);
        return { json: { instance_id: instanceId, status }, text: `instance ${instanceId}: ${status}` };
      };
    },
  });
}

/** Spare or unspare: prints the orphan afterwards. */
function orphanCommand(summary: string, spared: boolean): Command {
  return command({
    args: ['server_id'],
    summary,
    prepare: ({ server_id: serverIdText }) => {
      const serverId = nonNegativeInteger(serverIdText ?? '', 'SERVER_ID');
      return async (deps) => {
        const orphan = await spareOrphan(deps, serverId, spared);
        if (!orphan) throw new UsageError(`no orphaned server ${serverId} is waiting`);
        return { json: orphan, text: `server ${serverId}: ${spared ? 'spared' : 'destroyed after its grace period'}` };
      };
    },
  });
}

function capacityPool(options: Options): { pool: CapacityPool; limit: number } {
  const { ipv4, flavor, limit } = options;
  if (ipv4 !== undefined && flavor === undefined && limit === undefined) {
    return { pool: { kind: 'ipv4' }, limit: nonNegativeInteger(ipv4, '--ipv4') };
  }
  if (ipv4 === undefined && flavor !== undefined && limit !== undefined) {
    return { pool: { kind: 'tier', flavor: flavorArg(flavor) }, limit: nonNegativeInteger(limit, '--limit') };
  }
  throw new UsageError('give either --ipv4 N or --flavor F --limit N');
}

export const commands = new Map<string, Command>([
  [
    'account create',
    command({
      args: [],
      options: ['email', 'deposit', 'unconfirmed', 'suspended'],
      synopsis: '[--email E] [--deposit USD] [--unconfirmed] [--suspended]',
      summary: 'open an account, and a session for it',
      prepare: (_, options) => {
        const email = emailArg(options.email);
        const depositMicros = options.deposit === undefined ? 0 : usd(options.deposit);
        return async (deps) => {
          const opened = await openAccount(deps, { email, confirmed: !options.unconfirmed, suspended: options.suspended === true });
          const account = depositMicros > 0 ? await deposit(deps, opened.account_id, depositMicros) : opened;
          const { session, csrfToken, expiresAt } = await openSession(deps, account.account_id);
          const json = { ...accountView(account), session, csrf_token: csrfToken, session_expires_at: expiresAt.toISOString() };
          return { json, text: fields(json) };
        };
      },
    }),
  ],
  ['account deposit', moneyCommand('credit an account', 'deposited', 1, deposit)],
  [
    'account charge',
    moneyCommand(
      'debit an account (billing pause applies)',
      'charged',
      -1,
      (deps, id, micros) => charge(deps, id, micros, 'operator charge'),
      ({ id, usd: amount }) => `Charge ${id} $${amount}? At a balance of zero its running servers are powered off.`,
    ),
  ],
  ['account confirm', flagCommand('mark an account confirmed', 'confirmed', () => ({ confirmed: true }))],
  [
    'account suspend',
    flagCommand('suspend an account', 'suspended', () => ({ suspended: true }), {
      confirm: ({ id }) => `Suspend ${id}? Its keys and sessions are refused until it is unsuspended.`,
    }),
  ],
  ['account unsuspend', flagCommand('lift a suspension', 'unsuspended', () => ({ suspended: false }))],
  [
    'account delete',
    flagCommand(
      'mark an account deleted now (refused while it has live instances: their servers would run on unbilled)',
      'deleted',
      () => ({ deleted_at: new Date().toISOString() }),
      {
        confirm: ({ id }) => `Delete ${id}? Its keys and sessions stop working for good.`,
        check: async (deps, account) => {
          const live = await listOwnedInstances(deps, account.account_id);
          if (live.length > 0)
            throw new RefusedError(
              `${account.account_id} has ${live.length} live instance(s) (${live.map((i) => `${i.instance_id} ${i.status}`).join(', ')}): their servers would run on with nobody billed; delete them first (or suspend the account); nothing changed`,
            );
        },
      },
    ),
  ],
  [
    'account find',
    command({
      args: ['email'],
      summary: 'the accounts with this e-mail address (a whole-table scan)',
      prepare: ({ email }) => {
        const address = emailArg(email);
        return async (deps) => {
          const found = (await scanAccounts(deps, address)).map(accountView);
          if (found.length === 0) throw new RefusedError(`no account has the e-mail address ${address}`);
          return { json: { accounts: found }, text: table('accounts', found.map(accountRow)) };
        };
      },
    }),
  ],
  [
    'account list',
    command({
      args: [],
      summary: 'every account, oldest first (a whole-table scan)',
      prepare: () => async (deps) => {
        const accounts = (await scanAccounts(deps)).map(accountView);
        return { json: { accounts }, text: table('accounts', accounts.map(accountRow)) };
      },
    }),
  ],
  [
    'account show',
    command({
      args: ['id'],
      summary: `an account, its keys, live instances and last ${LEDGER_ENTRIES_SHOWN} ledger entries`,
      prepare:
        ({ id }) =>
        async (deps) => {
          const summary = accountView(await existingAccount(deps, id));
          const [keys, instances, ledger] = await Promise.all([
            listAccountApiKeys(deps, id),
            listOwnedInstances(deps, id),
            listLedgerEntries(deps, id),
          ]);
          const json = {
            ...summary,
            keys: keys.map(({ id: keyId, name, key_prefix, is_active, last_used_at }) => ({
              id: keyId,
              name,
              key_prefix,
              is_active,
              last_used_at,
            })),
            instances: instances.map((i) => ({ id: i.instance_id, status: i.status, flavor: i.plan.flavor })),
            // Entry ids sort by kind, not time.
            ledger: ledger
              .toSorted((a, b) => a.created_at.localeCompare(b.created_at))
              .slice(-LEDGER_ENTRIES_SHOWN)
              .map((e) => ({
                created_at: e.created_at,
                kind: e.kind,
                ...money('amount', e.amount),
                instance_id: e.instance_id ?? null,
                description: e.description ?? null,
              })),
          };
          return {
            json,
            text: [fields(summary), table('keys', json.keys), table('instances', json.instances), table('ledger', json.ledger)].join(
              '\n\n',
            ),
          };
        },
    }),
  ],
  [
    'session create',
    command({
      args: ['id'],
      summary: 'a browser session and its CSRF token',
      prepare:
        ({ id }) =>
        async (deps) => {
          await existingAccount(deps, id);
          const { session, csrfToken, expiresAt } = await openSession(deps, id);
          const json = { account_id: id, session, csrf_token: csrfToken, expires_at: expiresAt.toISOString() };
          return { json, text: fields(json) };
        },
    }),
  ],
  [
    'billing review',
    command({
      args: [],
      summary: 'review the accounts due now (pause, warnings, statements), as the minute sweep does',
      prepare: () => async (deps) => {
        const report = await reviewDueAccounts(deps);
        return {
          json: { reviewed: report.reviewed, moved: report.moved, failures: report.failures },
          text: `review: ${report.reviewed} accounts reviewed, ${report.moved} instances moved from the old meter, ${report.failures} failures`,
        };
      },
    }),
  ],
  [
    'billing migrate',
    command({
      args: [],
      summary: 'move instances metered the old way to their account checkpoints (safe to rerun)',
      prepare: () => async (deps) => {
        const moved = await moveLegacyMetered(deps);
        return { json: { moved }, text: `migrate: ${moved} instances moved to their account checkpoints` };
      },
    }),
  ],
  [
    'capacity set',
    command({
      args: [],
      options: ['ipv4', 'flavor', 'limit'],
      synopsis: '--ipv4 N | --flavor F --limit N',
      summary: 'size the IPv4 pool or a flavor tier (units in use stay in use)',
      confirm: (_, options) =>
        `Set the ${options.ipv4 !== undefined ? 'IPv4 pool' : `${options.flavor ?? ''} tier`} limit to ${options.ipv4 ?? options.limit ?? ''}? Creates past it are refused.`,
      prepare: (_, options) => {
        const { pool, limit } = capacityPool(options);
        return async (deps, mode) => {
          if (mode?.dryRun) {
            const capacity = await capacityOverview(deps);
            const now = pool.kind === 'ipv4' ? capacity.ipv4 : capacity.tiers[pool.flavor];
            return dryRun(
              { pool: pool.kind, ...(pool.kind === 'tier' ? { flavor: pool.flavor } : {}), limit, current: now ?? null },
              `${pool.kind === 'tier' ? `tier ${pool.flavor}` : 'ipv4 pool'}: limit would be ${limit} (now ${JSON.stringify(now ?? null)})`,
            );
          }
          await setCapacityLimit(deps, pool, limit);
          return {
            json: { pool: pool.kind, ...(pool.kind === 'tier' ? { flavor: pool.flavor } : {}), limit },
            text: `${pool.kind === 'tier' ? `tier ${pool.flavor}` : 'ipv4 pool'}: limit ${limit}`,
          };
        };
      },
    }),
  ],
  [
    'capacity show',
    command({
      args: [],
      summary: 'the IPv4 pool and every flavor tier: limit and units in use',
      prepare: () => async (deps) => {
        const capacity = await capacityOverview(deps);
        const rows = [
          { pool: 'ipv4', ...capacity.ipv4 },
          ...Object.entries(capacity.tiers).map(([flavor, tier]) => ({ pool: `tier ${flavor}`, ...tier })),
        ];
        return { json: capacity, text: table('capacity', rows) };
      },
    }),
  ],
  [
    'capacity migrate',
    command({
      args: [],
      summary: 'move the limits and units of the counters of before sharding onto the shards (safe to run again)',
      prepare: () => async (deps) => {
        const json = { ...(await moveCapacityToShards(deps)) };
        return { json, text: fields(json) };
      },
    }),
  ],
  [
    'reconcile',
    command({
      args: [],
      options: ['grace'],
      synopsis: '[--grace SECONDS]',
      summary: 'run the reconciler now (work untouched for --grace seconds, default 120, counts as stuck)',
      prepare: (_, options) => {
        const graceMs = options.grace === undefined ? undefined : nonNegativeInteger(options.grace, '--grace') * 1000;
        return async (deps) => {
          const report = await reconcile(deps, Date.now(), graceMs);
          const { drift, ...repairs } = report;
          const json = {
            deletes_restarted: repairs.deletesRestarted,
            provisions_started: repairs.provisionsStarted,
            provisions_failed: repairs.provisionsFailed,
            actions_settled: repairs.actionsSettled,
            jobs_ended: repairs.jobsEnded,
            leaked_servers_destroyed: repairs.leakedServersDestroyed,
            orphans_found: repairs.orphansFound,
            servers_readopted: repairs.serversReadopted,
            absences_suspected: repairs.absencesSuspected,
            sweep_guard_halted: repairs.sweepGuardHalted,
            drift,
          };
          const { drift: _, ...counts } = json;
          return {
            json,
            text: fields({ ...counts, ...Object.fromEntries(Object.entries(drift).map(([kind, n]) => [`drift_${kind}`, n])) }),
          };
        };
      },
    }),
  ],
  [
    'events tail',
    command({
      args: [],
      options: ['account', 'limit'],
      synopsis: '[--account ID] [--limit N]',
      summary: 'print events as they are committed, until Ctrl-C or N events (--json: one object per event)',
      prepare: (_, options) => {
        const limit = options.limit === undefined ? undefined : nonNegativeInteger(options.limit, '--limit');
        return async (deps) => {
          // --json is a global option: the stream follows it, one object per line.
          const json = process.argv.includes('--json');
          const printed = await tailEvents(deps, {
            accountId: options.account,
            limit,
            print: (event) => console.log(json ? JSON.stringify(event) : eventLine(event)),
            onReady: () => console.error('following events (Ctrl-C to stop)'),
          });
          return { json: { events_printed: printed }, text: `${printed} events` };
        };
      },
    }),
  ],
  [
    'audit',
    command({
      args: [],
      summary: 'compare every live instance with its server and every counter with what instances hold (exit 1 on drift)',
      prepare: () => async (deps) => {
        const report = await audit(deps);
        const drifts = report.instances.length + report.leaked_servers.length + report.counters.length;
        const text = [
          table(
            'instances drifted',
            report.instances.map(({ instance_id, kinds }) => ({ instance_id, kinds: kinds.join(',') })),
          ),
          table('leaked servers', report.leaked_servers),
          table('counters off', report.counters),
        ].join('\n\n');
        return { json: { ...report, drift_count: drifts }, text, exitCode: drifts > 0 ? 1 : 0 };
      },
    }),
  ],
  [
    'orphans list',
    command({
      args: [],
      summary: 'servers no instance owns, waiting for destruction (powered off), and whether the sweep’s guard holds',
      prepare: () => async (deps) => {
        const { guard, orphans } = await orphanOverview(deps);
        const text = [
          guard.halted_at
            ? `sweep guard: halted at ${guard.halted_at} (${guard.reason ?? ''}); resume with: orphans resume`
            : 'sweep guard: clear',
          table('orphaned servers', orphans),
        ].join('\n\n');
        return { json: { guard, orphans }, text };
      },
    }),
  ],
  ['orphans spare', orphanCommand('never destroy this orphaned server (until unspared)', true)],
  ['orphans unspare', orphanCommand('let a spared orphaned server be destroyed after its grace period', false)],
  [
    'orphans resume',
    command({
      args: [],
      summary: 'let the sweep power off, destroy and lose servers again after its guard tripped (its count of losses starts anew)',
      prepare: () => async (deps) => {
        await resumeSweepGuard(deps);
        return { json: { halted_at: null }, text: 'sweep guard: clear' };
      },
    }),
  ],
  ['instance quarantine', instanceCommand('refuse every action on an instance but delete', quarantineInstance)],
  ['instance release', instanceCommand('lift a quarantine', releaseInstance)],
]);

export function usageOf(name: string, { args, synopsis }: Command): string {
  return [name, ...args.map((a) => a.toUpperCase()), ...(synopsis ? [synopsis] : [])].join(' ');
}

export function usage(): string {
  const lines = [...commands].map(([name, definition]) => [usageOf(name, definition), definition.summary] as const);
  const width = Math.max(...lines.map(([text]) => text.length));
  return [
    'Usage: npm run --silent ops -- <command> [--json] [--stack NAME] [--dry-run] [--yes]',
    '',
    ...lines.map(([text, summary]) => `  ${text.padEnd(width)}  ${summary}`),
    '',
    'USD amounts are dollars with up to two decimals (12 or 12.50). The local service (npm start) is the target',
    'unless --stack NAME names a deployed stack. --json prints one JSON object. --dry-run checks and says what a',
    'command would change, changing nothing. account charge, suspend and delete and capacity set ask on a terminal',
    'first (--yes skips the question; without a terminal they run).',
  ].join('\n');
}

/** Finds the command and checks its arguments and options; a UsageError when any is wrong. */
export function prepareCommand(positionals: readonly string[], options: Options): Action {
  return prepareCommandWithQuestion(positionals, options).action;
}

/** As prepareCommand, with the question to ask first when the command changes something hard to take back. */
export function prepareCommandWithQuestion(positionals: readonly string[], options: Options): { action: Action; question?: string } {
  const [group = '', verb = '', ...args] = positionals;
  const name = commands.has(group) ? group : `${group} ${verb}`.trim();
  const rest = commands.has(group) ? [verb, ...args].filter(Boolean) : args;
  const definition = commands.get(name);
  if (!definition) throw new UsageError(`unknown command ${name}; see help`);
  if (rest.length !== definition.args.length) throw new UsageError(`usage: ${usageOf(name, definition)}`);
  const stray = (Object.keys(options) as OptionName[]).find((o) => options[o] !== undefined && !definition.options?.includes(o));
  if (stray) throw new UsageError(`${name} takes no --${stray}`);
  const named = Object.fromEntries(definition.args.map((a, i) => [a, rest[i] ?? '']));
  const action = definition.prepare(named, options);
  return definition.confirm ? { action, question: definition.confirm(named, options) } : { action };
}
