import type { Deps } from '../../shared/domain/deps';
import { tableName } from '../../shared/platform';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { DestroyedDroplet, SimulatedDroplet, Simulator } from '../../infra/local/simulator';
import { catalog } from '../../shared/model/flavors';
import { getAccount, type Account } from '../../shared/store/accounts';
import { instanceSchema, type Instance } from '../../shared/model/instance';
import { listLedgerEntries, type LedgerEntry } from '../../shared/store/ledger';
import { getTopUp } from '../../shared/store/top-ups';
import type { PaymentsSimulator } from '../../infra/local/payments-simulator';
import { jobSchema } from '../../shared/model/job';
import type { ServiceEvent } from '../../shared/schemas/events';
import { capacityCounters, capacityHeldByInstances } from '../support/capacity';
import { tcpSshProbe } from '../../shared/upstream/ssh-probe';

export interface InvariantInput {
  /** The service's dependencies: its tables and workflow engine are read directly. */
  readonly deps: Deps;
  readonly simulator: Simulator;
  /** The events received so far (read again while waiting for those still on their way). */
  readonly events: () => readonly ServiceEvent[];
  readonly accountIds: readonly string[];
  /** The accounts billing-paused once every workflow has ended. */
  readonly pausedAccounts?: ReadonlySet<string>;
  /** Every create sent, with every answer it got. */
  readonly creates?: readonly CreateRecord[];
}

/** One create and its retries with the same Idempotency-Key; its project name is unique to it. */
export interface CreateRecord {
  readonly key: string;
  readonly accountId: string;
  readonly projectName: string;
  readonly flavor: string;
  /** Each attempt's status (0: the connection was lost). */
  readonly answers: number[];
  /** The instances its 202 answers named. */
  readonly instanceIds: number[];
}

const HOUR_MS = 3_600_000;
const TRANSITIONAL = ['pending', 'provisioning', 'resizing', 'deleting'];

/**
 * What must hold once faults have stopped and the reconciler has run. Each check is written from the contract, not
 * from the code under test: prices come from the catalog, costs from the formula, servers from the simulator.
 */
export async function checkInvariants(input: InvariantInput): Promise<string[]> {
  const { deps, simulator, events, accountIds } = input;
  const instances = await allInstances(deps);
  const { droplets, destroyed } = simulator.state();
  const violations = [
    ...checkServers(instances, droplets),
    ...checkDestroyed(instances, destroyed),
    ...checkPaused(instances, droplets, input.pausedAccounts ?? new Set()),
    ...checkCreates(instances, input.creates ?? []),
    ...(await checkCapacity(deps)),
    ...(await checkJobs(deps)),
    ...(await checkBilling(deps, instances, accountIds)),
    ...(await checkEvents(instances, events)),
    ...(await checkReachable(instances, droplets)),
  ];
  return violations;
}

/**
 * `active` is "running and reachable by SSH": every live instance recorded active whose server runs answers SSH on
 * its address and port (probed as the service does; the run's faults are off by now).
 */
async function checkReachable(instances: readonly Instance[], droplets: readonly SimulatedDroplet[]): Promise<string[]> {
  const probe = tcpSshProbe(2_000);
  const running = new Set(droplets.filter((droplet) => droplet.status === 'active').map((droplet) => String(droplet.id)));
  const active = instances.filter((i) => i.deleted_at === null && i.status === 'active' && running.has(i.vps_id) && i.ipv4 !== null);
  const silent = await Promise.all(active.map(async (i) => ((await probe.answers(i.ipv4 ?? '', i.ssh_port)) ? [] : [i.instance_id])));
  return silent.flat().map((id) => `instance ${id} is active but its SSH does not answer`);
}

export async function allInstances(deps: Deps): Promise<Instance[]> {
  const items: Instance[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.dynamo.send(
      new ScanCommand({ TableName: tableName(deps, 'instances'), ConsistentRead: true, ExclusiveStartKey: start }),
    );
    items.push(...(page.Items ?? []).map((item) => instanceSchema.parse(item)));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Every live instance's status and plan equal its server's; exactly one server per live instance, none otherwise. */
function checkServers(instances: readonly Instance[], droplets: readonly SimulatedDroplet[]): string[] {
  const violations: string[] = [];
  const owned = new Set<number>();
  for (const instance of instances) {
    const name = `instance ${instance.instance_id} (${instance.status})`;
    const servers = droplets.filter((d) => d.tags.some((tag) => tag.endsWith(`-instance-${instance.instance_id}`)));
    const live = instance.deleted_at === null && (instance.status === 'active' || instance.status === 'stopped');
    if (instance.deleted_at === null && TRANSITIONAL.includes(instance.status))
      violations.push(`${name} is still in a transitional status`);
    if (instance.active_job_id !== null) violations.push(`${name} still names a running action`);
    if (instance.deleted_at !== null && instance.status !== 'destroyed') violations.push(`${name} was deleted but never destroyed`);
    if (!live) {
      if (servers.length > 0) violations.push(`${name} is not live but has server(s) ${servers.map((s) => s.id).join(', ')}`);
      continue;
    }
    if (servers.length !== 1) {
      violations.push(`${name} has ${servers.length} servers`);
      continue;
    }
    const [server] = servers;
    owned.add(server!.id);
    if (server!.id !== instance.upstream_id)
      violations.push(`${name} records server ${instance.upstream_id} but its server is ${server!.id}`);
    const expected = instance.status === 'active' ? 'active' : 'off';
    if (server!.status !== expected) violations.push(`${name}: its server is ${server!.status}`);
    if (server!.sizeSlug !== instance.plan.flavor)
      violations.push(`${name} is on ${instance.plan.flavor} but its server is ${server!.sizeSlug}`);
    if (instance.pending_plan !== null) violations.push(`${name} still holds a pending plan`);
  }
  for (const droplet of droplets)
    if (!owned.has(droplet.id)) violations.push(`server ${droplet.id} (${droplet.tags.join(' ')}) belongs to no live instance`);
  return violations;
}

const instanceOfTags = (tags: readonly string[]) => {
  const tag = tags.find((t) => /-instance-\d+$/.test(t));
  return tag === undefined ? undefined : Number(tag.slice(tag.lastIndexOf('-') + 1));
};

/**
 * The service never destroys a server someone may still own: any server destroyed other than out of band that is the
 * recorded server of a live instance, or of one that failed after it had been running (lost by inference: its server
 * must be restored, not destroyed), is a violation.
 */
function checkDestroyed(instances: readonly Instance[], destroyed: readonly DestroyedDroplet[]): string[] {
  const byId = new Map(instances.map((instance) => [instance.instance_id, instance]));
  const violations: string[] = [];
  for (const droplet of destroyed) {
    if (droplet.via !== 'api') continue;
    const instance = byId.get(instanceOfTags(droplet.tags) ?? -1);
    if (!instance || instance.upstream_id !== droplet.id || instance.deleted_at !== null) continue;
    const live = instance.status === 'active' || instance.status === 'stopped';
    const lostByInference = instance.status === 'failed' && instance.activated_at !== null;
    if (live || lostByInference)
      violations.push(`instance ${instance.instance_id} (${instance.status}): the service destroyed its server ${droplet.id}`);
  }
  return violations;
}

/** Once every workflow has ended, no server of a billing-paused account runs. */
function checkPaused(instances: readonly Instance[], droplets: readonly SimulatedDroplet[], paused: ReadonlySet<string>): string[] {
  const accountOf = new Map(instances.map((instance) => [instance.instance_id, instance.account_id]));
  return droplets
    .filter((droplet) => droplet.status === 'active' && paused.has(accountOf.get(instanceOfTags(droplet.tags) ?? -1) ?? ''))
    .map(
      (droplet) =>
        `server ${droplet.id} (${droplet.tags.join(' ')}) runs on billing-paused account ${accountOf.get(instanceOfTags(droplet.tags)!)}`,
    );
}

/**
 * One key, one instance: every 202 a key got names the same instance, a key deploys at most one instance, and an
 * instance a key deployed is one its answers named (a create answered 5xx, 504 or a dropped connection deployed
 * nothing, or its key replays what it deployed).
 */
function checkCreates(instances: readonly Instance[], creates: readonly CreateRecord[]): string[] {
  const violations: string[] = [];
  for (const record of creates) {
    const deployed = instances.filter((i) => i.account_id === record.accountId && i.project_name === record.projectName);
    const name = `create ${record.key} (answered ${record.answers.join(', ')})`;
    if (record.instanceIds.length > 1) violations.push(`${name}: its key named instances ${record.instanceIds.join(' and ')}`);
    if (deployed.length > 1) violations.push(`${name}: deployed ${deployed.length} instances`);
    for (const instance of deployed)
      if (!record.instanceIds.includes(instance.instance_id))
        violations.push(`${name}: deployed instance ${instance.instance_id}, which its key does not replay`);
  }
  return violations;
}

/** Capacity used equals what the instances hold. */
async function checkCapacity(deps: Deps): Promise<string[]> {
  const [counters, held] = await Promise.all([capacityCounters(deps), capacityHeldByInstances(deps)]);
  const names = new Set([...Object.keys(counters), ...Object.keys(held)]);
  return [...names]
    .filter((name) => (counters[name] ?? 0) !== (held[name] ?? 0))
    .map((name) => `${name}: counter ${counters[name] ?? 0}, instances hold ${held[name] ?? 0}`);
}

/** No job running without a running execution. */
async function checkJobs(deps: Deps): Promise<string[]> {
  const { Items = [] } = await deps.dynamo.send(new ScanCommand({ TableName: tableName(deps, 'jobs'), ConsistentRead: true }));
  const violations: string[] = [];
  for (const job of Items.map((item) => jobSchema.parse(item)).filter((j) => j.status === 'running')) {
    if (job.type === 'reconcile') {
      violations.push(`reconcile job ${job.job_id} is still running`);
      continue;
    }
    const execution = await deps.workflows.execution(job).catch(() => 'absent');
    if (execution !== 'running') violations.push(`${job.type} job ${job.job_id} is running without a running execution`);
  }
  return violations;
}

/** A segment's cost from its start to `atMs`, as the contract states it: price × time, a quarter while stopped. */
const costAt = (piece: { start: string; hourly_micros: number; quarters: number }, atMs: number) =>
  Math.round((piece.hourly_micros * piece.quarters * (atMs - Date.parse(piece.start))) / (HOUR_MS * 4));

type Piece = NonNullable<LedgerEntry['pieces']>[number];

/**
 * Each instance's charges equal the sum over its segments of time × rate, to the micro-dollar per segment; the
 * pieces cover its billed time without gap or overlap, from its activation to where its account bills it from now
 * (or to its deletion); the open segment bills what the instance is, and its account carries it; balances equal
 * their ledgers.
 */
async function checkBilling(deps: Deps, instances: readonly Instance[], accountIds: readonly string[]): Promise<string[]> {
  const violations: string[] = [];
  const ledgers = new Map<string, LedgerEntry[]>();
  const accounts = new Map<string, Account>();
  for (const accountId of accountIds) {
    const entries = await listLedgerEntries(deps, accountId);
    ledgers.set(accountId, entries);
    const account = await getAccount(deps, accountId);
    if (account) accounts.set(accountId, account);
    const sum = entries.reduce((total, entry) => total + entry.amount, 0);
    if (account?.balance !== sum) violations.push(`account ${accountId}: balance ${account?.balance} but its ledger sums to ${sum}`);
    for (const entry of entries.filter((e) => e.kind === 'meter')) {
      const total = (entry.pieces ?? []).reduce((sum, piece) => sum + piece.amount, 0);
      if (entry.amount !== -total)
        violations.push(`account ${accountId}: entry ${entry.entry_id} charges ${-entry.amount}, its pieces ${total}`);
    }
  }
  for (const instance of instances) {
    const name = `instance ${instance.instance_id}`;
    const pieces = (ledgers.get(instance.account_id) ?? [])
      .filter((e) => e.kind === 'meter')
      .flatMap((entry) => (entry.pieces ?? []).filter((piece) => (piece.instance_id ?? entry.instance_id) === instance.instance_id))
      .sort((a, b) => a.from.localeCompare(b.from));
    const carried = accounts.get(instance.account_id)?.burning[String(instance.instance_id)];
    if (instance.meter_shard !== undefined) violations.push(`${name} is still metered the old way`);
    if (instance.activated_at === null) {
      if (pieces.length > 0 || carried) violations.push(`${name} was charged but never activated`);
      continue;
    }
    const firstFrom = pieces[0]?.from ?? carried?.billed_until;
    if (firstFrom !== undefined && firstFrom !== instance.activated_at)
      violations.push(`${name}: billing starts at ${firstFrom}, activated at ${instance.activated_at}`);
    pieces.slice(1).forEach((piece, i) => {
      if (piece.from !== pieces[i]!.to) violations.push(`${name}: billed time jumps from ${pieces[i]!.to} to ${piece.from}`);
    });
    if (carried && pieces.length > 0 && pieces.at(-1)!.to !== carried.billed_until)
      violations.push(`${name}: charged to ${pieces.at(-1)!.to} but its account bills it from ${carried.billed_until}`);
    if (!carried && instance.deleted_at !== null && instance.billing_ends_at === null && pieces.at(-1)?.to !== instance.deleted_at) {
      violations.push(`${name}: deleted at ${instance.deleted_at} but charged to ${pieces.at(-1)?.to}`);
    }
    const segments = new Map<string, Piece[]>();
    for (const piece of pieces) {
      const key = `${piece.start}|${piece.hourly_micros}|${piece.quarters}`;
      segments.set(key, [...(segments.get(key) ?? []), piece]);
    }
    for (const [key, parts] of segments) {
      const charged = parts.reduce((sum, piece) => sum + piece.amount, 0);
      const expected = costAt(parts[0]!, Date.parse(parts.at(-1)!.to)) - costAt(parts[0]!, Date.parse(parts[0]!.from));
      if (charged !== expected) violations.push(`${name}: segment ${key} charged ${charged}, its time at its rate costs ${expected}`);
    }
    const open = instance.billing_segments.find((segment) => segment.end === null);
    const live =
      instance.deleted_at === null && instance.billing_ends_at === null && (instance.status === 'active' || instance.status === 'stopped');
    if (live) {
      const price = Math.round((catalog.get(instance.plan.flavor)?.hourly_price ?? 0) * 1_000_000);
      const quarters = instance.status === 'active' ? 4 : 1;
      if (open?.hourly_micros !== price || open.quarters !== quarters) {
        violations.push(`${name} is ${instance.status} on ${instance.plan.flavor} but billed ${JSON.stringify(open)}`);
      }
      if (!carried || carried.start !== open?.start || carried.hourly_micros !== open.hourly_micros || carried.quarters !== open.quarters) {
        violations.push(`${name} is billed ${JSON.stringify(open)} but its account carries ${JSON.stringify(carried)}`);
      }
    } else if (open || carried) {
      violations.push(
        `${name} is ${instance.status}${instance.deleted_at ? ', deleted' : ''} but still billed ${JSON.stringify(open ?? carried)}`,
      );
    }
  }
  return violations;
}

/** Every committed status change yields exactly one event, in order: each instance's events chain without a gap. */
async function checkEvents(instances: readonly Instance[], events: () => readonly ServiceEvent[]): Promise<string[]> {
  const chainEnd = (instance: Instance) => {
    const mine = events().filter(
      (e) => e.instance_id === instance.instance_id && (e.type === 'instance.created' || e.type === 'instance.status_changed'),
    );
    return mine.sort((a, b) => (a.sequence ?? 0) - (b.sequence ?? 0));
  };
  // The change streams deliver a little after the writes: wait until every chain has reached its instance's status.
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && instances.some((i) => lastStatus(chainEnd(i)) !== i.status)) await new Promise((r) => setTimeout(r, 200));
  const violations: string[] = [];
  for (const instance of instances) {
    const name = `instance ${instance.instance_id}`;
    const chain = chainEnd(instance);
    const ids = new Set(chain.map((e) => e.id));
    if (ids.size !== chain.length) violations.push(`${name}: ${chain.length - ids.size} event(s) published twice`);
    const unique = chain.filter((e, i) => chain.findIndex((other) => other.id === e.id) === i);
    if (unique[0]?.type !== 'instance.created') {
      violations.push(`${name}: no instance.created event`);
      continue;
    }
    let status = unique[0].data.status;
    for (const event of unique.slice(1)) {
      if (event.type !== 'instance.status_changed') continue;
      if (event.data.from !== status)
        violations.push(`${name}: an event from ${event.data.from} follows status ${status} (a change without its event)`);
      status = event.data.to;
    }
    if (status !== instance.status) violations.push(`${name}: events end at ${status}, the instance is ${instance.status}`);
  }
  return violations;
}

function lastStatus(chain: readonly ServiceEvent[]): string | undefined {
  const last = chain.at(-1);
  if (!last) return undefined;
  return last.type === 'instance.status_changed' ? last.data.to : last.type === 'instance.created' ? last.data.status : undefined;
}

/** A top-up a chaos run opened: whose, and the provider's checkout for it. */
export interface TopUpRecord {
  readonly accountId: string;
  readonly topUpId: string;
  readonly sessionId: string;
  /** A dispute of its payment, as the provider opened it (amount and fee in cents), and how it closed. */
  dispute?: { readonly id: string; readonly takenCents: number; closed?: 'won' | 'lost' };
}

/**
 * Money moved exactly once, as the provider says it moved: a checkout the provider took payment for is credited by
 * exactly one ledger entry of its amount and its top-up reads paid; one it did not is credited by none; what the
 * provider refunded of a charge is debited in all, no more and no less.
 */
export async function checkTopUps(deps: Deps, payments: PaymentsSimulator, records: readonly TopUpRecord[]): Promise<string[]> {
  const violations: string[] = [];
  const read = async (path: string) => {
    const response = await fetch(`${payments.url}/v1/${path}`, { headers: { authorization: `Bearer ${payments.secretKey}` } });
    return (await response.json()) as Record<string, any>;
  };
  for (const record of records) {
    const session = await read(`checkout/sessions/${record.sessionId}`);
    const entries = (await listLedgerEntries(deps, record.accountId)).filter((entry) => entry.entry_id === `top-up#${record.sessionId}`);
    const topUp = await getTopUp(deps, record.topUpId);
    const paid = session.status === 'complete' && session.payment_status === 'paid';
    if (!paid) {
      if (entries.length > 0) violations.push(`top-up ${record.topUpId}: credited, but its checkout is ${session.status}`);
      if (topUp?.status === 'paid') violations.push(`top-up ${record.topUpId}: reads paid, but its checkout is ${session.status}`);
      continue;
    }
    if (entries.length !== 1 || entries[0]!.amount !== session.amount_total * 10_000)
      violations.push(
        `top-up ${record.topUpId}: paid ${session.amount_total} cents, credited ${JSON.stringify(entries.map((e) => e.amount))}`,
      );
    if (topUp?.status !== 'paid') violations.push(`top-up ${record.topUpId}: paid at the provider, reads ${topUp?.status}`);
    const intent = await read(`payment_intents/${session.payment_intent}`);
    const charge = await read(`charges/${intent.latest_charge}`);
    const refunds = (await listLedgerEntries(deps, record.accountId)).filter((entry) => entry.entry_id.startsWith(`refund#${charge.id}#`));
    const debited = -refunds.reduce((sum, entry) => sum + entry.amount, 0);
    if (debited !== charge.amount_refunded * 10_000)
      violations.push(`top-up ${record.topUpId}: ${charge.amount_refunded} cents refunded, ${debited} micro-dollars debited`);
    if (record.dispute) violations.push(...checkDispute(record, await listLedgerEntries(deps, record.accountId)));
  }
  return violations;
}

/** A dispute takes its amount and the provider's fee once; a won one gives both back once; a lost one gives nothing. */
function checkDispute(record: TopUpRecord, ledger: readonly LedgerEntry[]): string[] {
  const { id, takenCents, closed } = record.dispute!;
  const amounts = (entryId: string) => ledger.filter((entry) => entry.entry_id === entryId).map((entry) => entry.amount);
  const expect = (entryId: string, amounts: number[], expected: number[]) =>
    JSON.stringify(amounts) === JSON.stringify(expected)
      ? []
      : [`dispute ${id}: ${entryId} booked ${JSON.stringify(amounts)}, expected ${JSON.stringify(expected)}`];
  return [
    ...expect(`dispute#${id}`, amounts(`dispute#${id}`), [-takenCents * 10_000]),
    ...expect(`dispute-won#${id}`, amounts(`dispute-won#${id}`), closed === 'won' ? [takenCents * 10_000] : []),
  ];
}

/** An account's run, as far as auto-recharge goes: how many moves could have crossed its threshold. */
export interface RechargeRecord {
  readonly accountId: string;
  readonly crossings: number;
}

/**
 * Auto-recharge charges the saved card at most once per crossing of its threshold: the card's successful charges
 * outside a checkout are no more than the moves that could have taken the balance under it (turning it on, spending,
 * refunds and disputes), each is credited by exactly one ledger entry of its amount, and no top-up was paid twice.
 */
export async function checkAutoRecharges(deps: Deps, payments: PaymentsSimulator, records: readonly RechargeRecord[]): Promise<string[]> {
  const violations: string[] = [];
  for (const record of records) {
    const account = await getAccount(deps, record.accountId);
    if (!account?.payment_customer_id) continue;
    const response = await fetch(`${payments.url}/v1/payment_intents?customer=${account.payment_customer_id}`, {
      headers: { authorization: `Bearer ${payments.secretKey}` },
    });
    const intents = ((await response.json()) as { data: Record<string, any>[] }).data;
    const charged = [];
    for (const intent of intents.filter((i) => i.status === 'succeeded')) {
      const topUp = await getTopUp(deps, String(intent.metadata?.top_up_id));
      if (topUp?.kind === 'auto_recharge') charged.push(intent);
    }
    if (charged.length > record.crossings)
      violations.push(
        `account ${record.accountId}: auto-recharge charged the card ${charged.length} times for ${record.crossings} possible crossings`,
      );
    const topUpIds = charged.map((intent) => String(intent.metadata.top_up_id));
    if (new Set(topUpIds).size !== topUpIds.length)
      violations.push(`account ${record.accountId}: an auto-recharge top-up was charged twice`);
    const ledger = await listLedgerEntries(deps, record.accountId);
    for (const intent of charged) {
      const credits = ledger.filter((entry) => entry.entry_id === `top-up#${intent.id}`).map((entry) => entry.amount);
      if (JSON.stringify(credits) !== JSON.stringify([intent.amount * 10_000]))
        violations.push(`auto-recharge ${intent.id}: charged ${intent.amount} cents, credited ${JSON.stringify(credits)}`);
    }
  }
  return violations;
}
