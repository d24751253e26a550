import ora from 'ora';
import type { ApiKeyInfo, Billing, FlavorPlan, Instance, InstanceSummary, Job } from '../sdk/index';
import { stringify as stringifyYaml } from 'yaml';
import { UsageError } from './errors';
import { renderFields, renderTable } from './table';

/** Where the result goes: one JSON or YAML document, or tables (boxed and coloured only on a terminal). */
export interface OutputMode {
  readonly json: boolean;
  readonly yaml?: boolean;
  readonly showSecrets: boolean;
  /** The columns of a list to print (`--format ID,IPv4`), by heading, in that order. */
  readonly columns?: readonly string[];
  /** Whether a list prints its headings (`--no-header` leaves them out). */
  readonly header?: boolean;
}

const HIDDEN = '[hidden: --show-secrets]';
const stdoutIsTerminal = () => Boolean(process.stdout.isTTY);

/**
 * The root password and private key stay off the screen unless asked for: `null` in JSON (so that no script takes a
 * placeholder for a password), and marked as hidden in a table.
 */
export function withoutSecrets<T extends InstanceSummary | Instance>(instance: T, mode: OutputMode, marker: string | null = null): T {
  if (mode.showSecrets) return instance;
  const hidden: T = { ...instance, root_password: instance.root_password === null ? null : marker };
  if ('ssh_key' in instance && instance.ssh_key.private_key !== null) {
    return { ...hidden, ssh_key: { ...instance.ssh_key, private_key: marker } };
  }
  return hidden;
}

/**
 * A frame and colour for a person at a terminal (colour unless NO_COLOR is set, as `--no-color` does); for a pipe or
 * a file, plain aligned columns with no box-drawing characters and no escape codes.
 */
const layout = () => (stdoutIsTerminal() ? ({ style: 'boxed', colour: !process.env.NO_COLOR } as const) : ({ style: 'plain' } as const));

/** A list's table, with the columns `--format` picked (in its order) and without headings under `--no-header`. */
function listTable(head: readonly string[], rows: readonly (readonly string[])[], mode: OutputMode, none: string): string {
  const picked = (mode.columns ?? head).map((name) => {
    const column = head.findIndex((heading) => heading.toLowerCase() === name.toLowerCase());
    if (column < 0) throw new UsageError(`no column ${name}: choose from ${head.join(', ')}`);
    return column;
  });
  const pick = (row: readonly string[]) => picked.map((column) => row[column] ?? '');
  if (rows.length === 0) return mode.header === false ? '' : none;
  return renderTable(pick(head), rows.map(pick), { ...layout(), header: mode.header !== false });
}

function keyValues(rows: Array<[string, string]>) {
  return renderFields(rows, layout());
}

const dash = (value: string | number | null) => (value === null || value === '' ? '-' : String(value));
const planText = ({ plan }: InstanceSummary) =>
  `${plan.flavor} (${dash(plan.vcpu)} vCPU, ${plan.ram_mb === null ? '-' : plan.ram_mb / 1024} GB RAM, ${dash(plan.disk_gb)} GB disk)`;

export function print(mode: OutputMode, value: unknown, asTable: () => string): void {
  if (mode.json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else if (mode.yaml) process.stdout.write(stringifyYaml(value));
  else {
    const table = asTable();
    // An empty list without headings prints nothing at all (a script's `while read` sees no line).
    if (table !== '') process.stdout.write(`${table}\n`);
  }
}

export function instanceTable(instance: Instance, mode: OutputMode, savedKeyFile?: string): string {
  const shown = withoutSecrets(instance, mode, HIDDEN);
  const rows: Array<[string, string]> = [
    ['ID', String(shown.instance_id)],
    ['Name', shown.project_name],
    ['Status', shown.status],
    ['Plan', planText(shown)],
    ['IPv4', dash(shown.ipv4)],
    ['Domain', dash(shown.domain)],
    ['SSH', shown.ipv4 ? `ssh -p ${shown.ssh_port} ${shown.root_user}@${shown.ipv4}` : '-'],
    ['Root password', dash(shown.root_password)],
    ['SSH key', `${shown.ssh_key.name}${shown.ssh_key.fingerprint ? ` (${shown.ssh_key.fingerprint})` : ''}`],
  ];
  if (shown.ssh_key.private_key !== null) rows.push(['Private key', savedKeyFile ? `saved to ${savedKeyFile}` : shown.ssh_key.private_key]);
  const labels = Object.entries(shown.labels ?? {});
  if (labels.length > 0) rows.push(['Labels', labels.map(([key, value]) => `${key}=${value}`).join(', ')]);
  rows.push(['Created', dash(shown.created_at)], ['Activated', dash(shown.activated_at)]);
  return keyValues(rows);
}

export function instancesTable(instances: InstanceSummary[], mode: OutputMode): string {
  return listTable(
    ['ID', 'NAME', 'STATUS', 'FLAVOR', 'IPV4', 'CREATED'],
    instances.map((i) => [String(i.instance_id), i.project_name, i.status, i.plan.flavor, dash(i.ipv4), dash(i.created_at)]),
    mode,
    'No instances.',
  );
}

export function jobTable(job: Job): string {
  return keyValues([
    ['Job', job.job_id],
    ['Type', job.type],
    ['Instance', String(job.instance_id)],
    ['Status', job.status],
    ['Started', job.started_at],
    ['Finished', dash(job.finished_at)],
    ['Error', dash(job.error)],
  ]);
}

export function jobsTable(jobs: readonly Job[], mode: OutputMode): string {
  return listTable(
    ['JOB', 'TYPE', 'STATUS', 'STARTED', 'FINISHED', 'FAILURE'],
    jobs.map((job) => [job.job_id, job.type, job.status, job.started_at, dash(job.finished_at), dash(job.failure?.code ?? job.error)]),
    mode,
    'No jobs.',
  );
}

/** Hours in a month as the usual cloud monthly cap counts them (DigitalOcean's: 672, four weeks). */
const HOURS_A_MONTH = 672;

export function flavorsTable(flavors: FlavorPlan[], mode: OutputMode): string {
  return listTable(
    ['FLAVOR', 'VCPU', 'RAM', 'DISK', 'USD/HOUR', 'USD/MONTH'],
    flavors.map((f) => [
      f.flavor,
      String(f.vcpu),
      `${f.ram_mb / 1024} GB`,
      `${f.disk_gb} GB`,
      f.hourly_price.toFixed(5),
      (f.hourly_price * HOURS_A_MONTH).toFixed(2),
    ]),
    mode,
    'No flavors.',
  );
}

export function keysTable(keys: ApiKeyInfo[], mode: OutputMode): string {
  return listTable(
    ['ID', 'NAME', 'PREFIX', 'ACTIVE', 'CREATED', 'LAST USED'],
    keys.map((k) => [String(k.id), k.name, k.key_prefix, k.is_active ? 'yes' : 'no', dash(k.created_at), dash(k.last_used_at)]),
    mode,
    'No keys.',
  );
}

/** A saved context as `vps context list` shows it: never the key or session themselves. */
export interface ContextRow {
  readonly name: string;
  readonly current: boolean;
  readonly api_url: string;
  readonly key_prefix: string | null;
  readonly session_expires_at: string | null;
}

export function contextsTable(contexts: readonly ContextRow[], mode: OutputMode): string {
  return listTable(
    ['CURRENT', 'NAME', 'API URL', 'KEY', 'SESSION UNTIL'],
    contexts.map((c) => [c.current ? '*' : '', c.name, c.api_url, dash(c.key_prefix), dash(c.session_expires_at)]),
    mode,
    'No contexts: `vps context create NAME --api-url URL` saves one.',
  );
}

export function billingTable(billing: Billing): string {
  const runway = billing.runway_hours === null ? 'nothing is billed' : `${billing.runway_hours} h (until ${billing.exhausts_at ?? ''})`;
  const recharge = billing.auto_recharge;
  return fieldsTable({
    Balance: `$${billing.balance_usd}${billing.billing_paused ? ' (billing paused: servers powered off)' : ''}`,
    'Burn rate': `$${billing.burn_rate_usd_per_hour}/hour`,
    Runway: runway,
    Deposited: `$${billing.total_deposited_usd}`,
    'Auto-recharge': recharge
      ? recharge.enabled
        ? `$${recharge.amount_usd} when at or below $${recharge.threshold_usd}`
        : `off${recharge.disabled_reason ? ` (${recharge.disabled_reason})` : ''}`
      : 'off',
  });
}

export function fieldsTable(fields: Record<string, string | number | boolean | null>): string {
  return keyValues(Object.entries(fields).map(([name, value]) => [name, dash(typeof value === 'boolean' ? String(value) : value)]));
}

function elapsed(since: number): string {
  const seconds = Math.floor((Date.now() - since) / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
}

/**
 * Progress of a wait, on stderr so that stdout keeps only the result: on a terminal a spinner that keeps each status
 * change on its own line and counts the seconds; otherwise (or on a terminal without a width) one plain line per change.
 */
export function progress(what: string) {
  const started = Date.now();
  // A terminal that reports no width (a pseudo-terminal under `script`, some CI runners) gets plain lines too: a
  // spinner there measures its lines by a width of 0 and never gets to the next tick.
  if (!process.stderr.isTTY || !(process.stderr.columns > 0)) {
    return {
      status: (status: string) => process.stderr.write(`${what}: ${status} (${elapsed(started)})\n`),
      stop: () => undefined,
    };
  }
  let current = 'waiting';
  // Enabled explicitly: ora would also switch itself off where a CI variable is set, terminal or not.
  const spinner = ora({ text: `${what}: ${current}`, stream: process.stderr, discardStdin: false, isEnabled: true }).start();
  const ticker = setInterval(() => (spinner.text = `${what}: ${current} (${elapsed(started)})`), 1000);
  return {
    status(status: string) {
      if (current !== 'waiting') spinner.stopAndPersist({ symbol: '•', text: `${what}: ${current} (${elapsed(started)})` });
      current = status;
      spinner.start(`${what}: ${current} (${elapsed(started)})`);
    },
    stop(ok = true) {
      clearInterval(ticker);
      const text = `${what}: ${current} (${elapsed(started)})`;
      if (ok) spinner.succeed(text);
      else spinner.fail(text);
    },
  };
}
