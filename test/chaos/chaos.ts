import type { Deps } from '../../shared/domain/deps';
import { randomBytes } from 'node:crypto';
import type { LocalRuntime } from '../../infra/local/runtime';
import type { Simulator } from '../../infra/local/simulator';
import type { PaymentsSimulator } from '../../infra/local/payments-simulator';
import type { EndpointFault } from '../../infra/local/step-functions';
import { configureAutoRecharge, reconcileTopUps } from '../../shared/domain/payments';
import { issueApiKey, openAccount } from '../../shared/domain/accounts';
import { charge, deposit, reviewDueAccounts } from '../../shared/domain/billing';
import { reconcile } from '../../shared/domain/reconciler';
import { getAccount } from '../../shared/store/accounts';
import { resumeSweepGuard } from '../../shared/domain/server-guard';
import type { ServiceEvent } from '../../shared/schemas/events';
import { startReceiver } from '../support/receiver';
import { allInstances, checkAutoRecharges, checkInvariants, checkTopUps, type CreateRecord, type TopUpRecord } from './invariants';
import { CHAOS_RUNTIME } from './runtime-settings';

/**
 * A seeded chaos run: random creates, actions and deletes from several accounts, under random upstream faults (5xx
 * and 429 bursts, latency past every timeout, reads by id answering 404), servers changed or destroyed behind the
 * service's back, money running out, DynamoDB stalling and restarting, and the service's process dying and coming
 * back. Then the faults stop, the reconciler runs, and the invariants are checked. The same seed makes the same
 * choices (timings still vary from run to run).
 */
export interface ChaosOptions {
  readonly seed: number;
  readonly ops: number;
  /** The service under test, started with CHAOS_RUNTIME's settings; left running. */
  readonly target: ChaosTarget;
  readonly accounts?: number;
  /** How many times the service's process dies and comes back during the run (default: one per 100 operations). */
  readonly crashes?: number;
  readonly log?: (line: string) => void;
}

/** What a run drives: the service's API, the upstream it uses, and the faults it can inflict on the processes. */
export interface ChaosTarget {
  readonly baseUrl: string;
  readonly simulator: Simulator;
  /** The payment provider: top-ups are paid, expired, refunded and their events replayed on it. */
  readonly payments: PaymentsSimulator;
  /** The service's dependencies, for the run's scheduled jobs, operators and invariant checks. */
  readonly deps: Deps;
  /** Resolves once no workflow execution is running. */
  idle(): Promise<void>;
  /** The workflow engine's endpoint refuses `operation` (an error status or a reset connection), or no longer does. */
  workflowFault(operation: string, fault: EndpointFault | undefined): Promise<void>;
  /** The service's process dies and comes back on the same data. */
  crash(): Promise<void>;
  /** DynamoDB Local, when it runs as a process of its own: stalled (SIGSTOP, then SIGCONT after `ms`) or restarted. */
  readonly dynamodb?: { stall(ms: number): void; restart(): Promise<void> };
}

/** A runtime in this process as a target: a crash loses its workflow executions and drops its connections. */
export function inProcessTarget(runtime: LocalRuntime): ChaosTarget {
  return {
    baseUrl: runtime.baseUrl,
    simulator: runtime.simulator,
    payments: runtime.payments,
    deps: runtime.deps,
    idle: () => runtime.stepFunctions.idle(),
    workflowFault: async (operation, fault) => runtime.stepFunctions.fault(operation, fault),
    crash: () => runtime.crashAndRestart(),
  };
}

export interface ChaosReport {
  readonly seed: number;
  readonly ops: number;
  /** How often each kind of operation was chosen. */
  readonly operations: Record<string, number>;
  /** The service's answers by status code. */
  readonly answers: Record<string, number>;
  readonly instances: number;
  /** Webhook deliveries received, and how many of them repeated an event already received (at least once). */
  readonly deliveries: { readonly received: number; readonly repeated: number };
  readonly violations: string[];
  readonly seconds: number;
}

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (below: number) => Math.floor(next() * below);
  return { next, int, pick: <T>(items: readonly T[]): T | undefined => (items.length ? items[int(items.length)] : undefined) };
}

const FLAVORS = ['s-1vcpu-2gb', 's-2vcpu-2gb', 's-2vcpu-4gb', 's-4vcpu-8gb'] as const;
const ACTIONS = ['power_off', 'power_on', 'reboot', 'resize'] as const;
const FAULT_STATUSES = [500, 502, 503, 429] as const;
const FAULT_MATCHES = ['', 'POST /v2/droplets', 'GET /v2/droplets', 'GET /v2/actions', 'DELETE /v2/droplets'] as const;

/** Weighted choice of the next operation. */
const OPERATIONS = [
  ['create', 14],
  ['action', 26],
  ['delete', 8],
  ['fault-burst', 8],
  ['latency', 5],
  ['faults-off', 6],
  ['ssh-silence', 3],
  ['out-of-band', 8],
  ['review', 6],
  ['reconcile', 4],
  ['money', 3],
  ['top-up', 5],
  ['read', 12],
  ['not-found', 5],
  ['dynamodb-stall', 3],
  ['dynamodb-restart', 1],
  ['workflow-fault', 3],
  ['provider-fault', 2],
  ['payment-order', 3],
  ['auto-recharge', 3],
] as const;
type Operation = (typeof OPERATIONS)[number][0] | 'crash';

interface Account {
  readonly accountId: string;
  readonly apiKey: string;
  readonly instances: number[];
  /** Moves that may take the balance under an auto-recharge threshold: each may be charged once. */
  crossings: number;
}

/** How the workflow engine refuses to start an execution: an error status, or the connection reset. */
const ENGINE_FAULTS: readonly EndpointFault[] = [{ status: 503 }, { status: 500, type: 'InternalFailure' }, { reset: true }];
/** What the payment provider answers instead of carrying out a call (our key refused, a bad request, an outage). */
const PROVIDER_FAULTS = [401, 400, 503, 500] as const;

/** How often a create is sent with its Idempotency-Key while it answers an unknown outcome. */
const CREATE_ATTEMPTS = 6;

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = performance.now();
  const log = options.log ?? (() => undefined);
  const rng = random(options.seed);
  const { target } = options;
  // Events are followed as a customer follows them, through webhooks: they outlive the service's process.
  const receiver = await startReceiver();
  const operations: Record<string, number> = {};
  const answers: Record<string, number> = {};
  const violations: string[] = [];
  const creates: CreateRecord[] = [];
  const topUps: TopUpRecord[] = [];
  /** A call to the payment provider's control routes, as the customer's card and bank would act. */
  const provider = (path: string, body: Record<string, unknown> = {}) =>
    fetch(`${target.payments.url}/_sim/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (response) => (response.ok ? ((await response.json()) as Record<string, unknown>) : undefined));
  try {
    const call = async (account: Account, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(`${target.baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${account.apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).catch(() => undefined);
      const status = response?.status ?? 'connection lost';
      answers[status] = (answers[status] ?? 0) + 1;
      const text = response ? await response.text().catch(() => '') : '';
      // A dependency down is 503 with Retry-After (or 504 for a keyed request): a 500 is a bug, whenever it comes.
      if (response?.status === 500) violations.push(`${method} ${path} answered 500: ${text}`);
      let parsed: Record<string, unknown> = {};
      try {
        parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      } catch {
        // A body cut off by a connection that dropped.
      }
      return { status: response?.status ?? 0, body: parsed, retryAfter: Number(response?.headers.get('retry-after') ?? 0) };
    };

    /** A paid top-up that saves the card, and the card seen saved on the account. */
    const saveCard = async (account: Account) => {
      const answer = await call(account, 'POST', '/api/v1/billing/top-ups', { amount_usd: 10, save_card: true });
      const sessionId = answer.body.provider_session_id;
      if (answer.status !== 201 || typeof sessionId !== 'string') throw new Error(`a top-up saving the card answered ${answer.status}`);
      topUps.push({ accountId: account.accountId, topUpId: String(answer.body.top_up_id), sessionId });
      await provider(`sessions/${sessionId}/pay`);
      const deadline = Date.now() + 30_000;
      while ((await getAccount(target.deps, account.accountId))?.payment_method_id == null) {
        if (Date.now() > deadline) throw new Error('the card was not saved');
        await sleep(200);
      }
    };

    const accounts: Account[] = [];
    // Deploys are limited to 5 an hour per account: more accounts, more instances.
    for (let i = 0; i < (options.accounts ?? 6); i++) {
      const account = await openAccount(target.deps, {
        email: `chaos-${options.seed}-${i}-${randomBytes(3).toString('hex')}@example.com`,
        confirmed: true,
        suspended: false,
      });
      await deposit(target.deps, account.account_id, 200_000_000);
      const { fullKey } = await issueApiKey(target.deps, account.account_id, 'chaos');
      const opened: Account = { accountId: account.account_id, apiKey: fullKey, instances: [], crossings: 0 };
      const hook = await call(opened, 'POST', '/api/v1/webhooks', {
        url: receiver.url,
        events: ['instance.created', 'instance.status_changed'],
      });
      if (hook.status !== 201) throw new Error(`registering a webhook answered ${hook.status}`);
      accounts.push(opened);
      // Half the accounts pay once with their card saved, so that auto-recharge can be turned on for them.
      if (i % 2 === 0) await saveCard(opened);
    }
    const crashes = options.crashes ?? Math.max(1, Math.floor(options.ops / 100));
    const crashAt = new Set(Array.from({ length: crashes }, () => 1 + rng.int(Math.max(1, options.ops - 1))));

    /**
     * A create sent with an Idempotency-Key, and sent again with the same key while its outcome is unknown (a 5xx, a
     * 504, a dropped connection, the key still in progress, a short 429): every answer is kept for the invariants.
     */
    const create = async (account: Account, record: CreateRecord, attempts: number) => {
      const body = { project_name: record.projectName, flavor: record.flavor };
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const answer = await call(account, 'POST', '/api/v1/instances', body, { 'idempotency-key': record.key });
        record.answers.push(answer.status);
        if (answer.status === 202) {
          const instanceId = Number(answer.body.instance_id);
          if (!record.instanceIds.includes(instanceId)) record.instanceIds.push(instanceId);
          if (!account.instances.includes(instanceId)) account.instances.push(instanceId);
          return;
        }
        const inProgress = answer.status === 409 && JSON.stringify(answer.body).includes('Idempotency-Key');
        const unknown = answer.status === 0 || answer.status >= 500 || inProgress || (answer.status === 429 && answer.retryAfter <= 5);
        if (!unknown || attempt === attempts) return;
        await sleep(Math.min(Math.max(answer.retryAfter * 1000, 500 * 2 ** (attempt - 1)), 5_000));
      }
    };

    const inFlight = new Set<Promise<unknown>>();
    const track = (work: Promise<unknown>) => {
      const tracked = work
        .catch((error: unknown) => log(`  (an operation failed: ${error instanceof Error ? error.message : String(error)})`))
        .finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
    };
    const paused = new Set<Account>();

    for (let op = 1; op <= options.ops; op++) {
      const account = rng.pick(accounts)!;
      const instanceId = rng.pick(account.instances);
      let chosen: Operation = crashAt.has(op) ? 'crash' : weighted(rng.next());
      if ((chosen === 'action' || chosen === 'delete' || chosen === 'read') && instanceId === undefined) chosen = 'create';
      if ((chosen === 'dynamodb-stall' || chosen === 'dynamodb-restart') && !target.dynamodb) chosen = 'read';
      if (chosen === 'read' && instanceId === undefined) chosen = 'create';
      operations[chosen] = (operations[chosen] ?? 0) + 1;
      switch (chosen) {
        case 'create': {
          const record: CreateRecord = {
            key: `chaos-${options.seed}-${op}-${randomBytes(4).toString('hex')}`,
            accountId: account.accountId,
            projectName: `chaos-${op}`,
            flavor: rng.pick(FLAVORS)!,
            answers: [],
            instanceIds: [],
          };
          creates.push(record);
          track(create(account, record, CREATE_ATTEMPTS));
          break;
        }
        case 'action': {
          const type = rng.pick(ACTIONS)!;
          const body = type === 'resize' ? { type, flavor: rng.pick(FLAVORS) } : { type };
          track(call(account, 'POST', `/api/v1/instances/${instanceId}/actions`, body));
          break;
        }
        case 'delete':
          track(call(account, 'DELETE', `/api/v1/instances/${instanceId}`));
          break;
        case 'read':
          track(call(account, 'GET', rng.next() < 0.5 ? `/api/v1/instances/${instanceId}` : '/api/v1/instances'));
          break;
        case 'fault-burst':
          await target.simulator.control.faults({
            fail_next: 1 + rng.int(4),
            status: rng.pick(FAULT_STATUSES)!,
            match: rng.pick(FAULT_MATCHES)!,
          });
          break;
        case 'not-found': {
          // A server that is there, read by id, answers 404 a few times: absence is only ever a suspicion.
          const droplet = rng.pick(target.simulator.state().droplets);
          if (!droplet) break;
          await target.simulator.control.faults({ fail_next: 1 + rng.int(3), status: 404, match: `GET /v2/droplets/${droplet.id}` });
          break;
        }
        case 'latency':
          await target.simulator.control.faults({ latency_ms: 700 + rng.int(1_000), latency_match: rng.pick(FAULT_MATCHES)! });
          break;
        case 'faults-off':
          await target.simulator.control.faults({ fail_next: 0, latency_ms: 0, ssh_silent: false });
          break;
        case 'ssh-silence':
          // No server's SSH answers until the next faults-off: provisions and power-ons wait, and may time out.
          await target.simulator.control.faults({ ssh_silent: true });
          break;
        case 'out-of-band': {
          const droplet = rng.pick(target.simulator.state().droplets);
          if (!droplet) break;
          const change = rng.pick(['power_off', 'power_on', 'resize', 'destroy'] as const)!;
          await target.simulator.control
            .outOfBand(droplet.id, change === 'resize' ? { type: 'resize', size: rng.pick(FLAVORS)! } : { type: change })
            .catch(() => undefined);
          break;
        }
        case 'review':
          track(reviewDueAccounts(target.deps));
          break;
        case 'reconcile':
          track(reconcile(target.deps, Date.now(), 5_000));
          break;
        case 'money': {
          // Spend the balance down past zero (the billing pause powers servers off); pay again now, or at the
          // account's next money move, or never (the pause then holds to the end of the run).
          const payBack = rng.next() < 0.6;
          const delay = rng.int(1_500);
          if (paused.has(account)) {
            paused.delete(account);
            track(deposit(target.deps, account.accountId, 200_000_000));
            break;
          }
          if (!payBack) paused.add(account);
          account.crossings += 1;
          track(
            charge(target.deps, account.accountId, 200_000_000, 'chaos').then(async () => {
              if (!payBack) return;
              await sleep(delay);
              await deposit(target.deps, account.accountId, 200_000_000);
            }),
          );
          break;
        }
        case 'top-up': {
          // A card top-up: paid (its event sometimes delivered again, several times at once, or partly refunded),
          // left to expire, or left open; each answer and outcome is kept for the invariants.
          const amountUsd = 5 + rng.int(46);
          const fate = rng.next();
          const replays = rng.int(6);
          const refund = rng.next() < 0.2 ? 1 + rng.int(amountUsd * 100) : 0;
          if (refund > 0) account.crossings += 1;
          track(
            call(account, 'POST', '/api/v1/billing/top-ups', { amount_usd: amountUsd }).then(async (answer) => {
              const sessionId = answer.body.provider_session_id;
              if (answer.status !== 201 || typeof sessionId !== 'string') return;
              topUps.push({ accountId: account.accountId, topUpId: String(answer.body.top_up_id), sessionId });
              if (fate < 0.15) await provider(`sessions/${sessionId}/expire`);
              if (fate < 0.3) return;
              const paid = await provider(`sessions/${sessionId}/pay`);
              const intent = paid?.payment_intent;
              if (typeof intent !== 'string') return;
              const completed = target.payments.events.findLast((event) => event.type === 'checkout.session.completed');
              if (completed && replays > 0) await provider(`events/${completed.id}/resend`, { times: replays });
              if (refund > 0) await provider(`payment_intents/${intent}/refund`, { amount: refund });
            }),
          );
          break;
        }
        case 'dynamodb-stall': {
          const ms = 1_000 + rng.int(10_000);
          log(`  op ${op}: DynamoDB stalls for ${ms} ms`);
          target.dynamodb!.stall(ms);
          break;
        }
        case 'dynamodb-restart': {
          log(`  op ${op}: DynamoDB restarts`);
          await target.dynamodb!.restart();
          break;
        }
        case 'workflow-fault': {
          // Step Functions refuses to start executions for a while: what was accepted must still happen.
          const fault = rng.pick(ENGINE_FAULTS)!;
          const ms = 500 + rng.int(4_000);
          log(`  op ${op}: StartExecution meets ${JSON.stringify(fault)} for ${ms} ms`);
          await target.workflowFault('StartExecution', fault);
          track(sleep(ms).then(() => target.workflowFault('StartExecution', undefined)));
          break;
        }
        case 'provider-fault':
          // The provider refuses the next calls, or carries one out and answers it past every timeout.
          await provider(
            'faults',
            rng.next() < 0.25
              ? { delay_ms: 3_000 + rng.int(4_000), times: 1 }
              : { status: rng.pick(PROVIDER_FAULTS)!, times: 1 + rng.int(3) },
          );
          break;
        case 'payment-order': {
          // A payment's own event held back while a refund or a dispute of it arrives first, as providers do deliver.
          const amountUsd = 5 + rng.int(46);
          const dispute = rng.next() < 0.4;
          const closeAs = rng.pick([undefined, 'won', 'lost'] as const);
          account.crossings += 1;
          track(
            call(account, 'POST', '/api/v1/billing/top-ups', { amount_usd: amountUsd }).then(async (answer) => {
              const sessionId = answer.body.provider_session_id;
              if (answer.status !== 201 || typeof sessionId !== 'string') return;
              const record: TopUpRecord = { accountId: account.accountId, topUpId: String(answer.body.top_up_id), sessionId };
              topUps.push(record);
              await provider('hold', { type: 'checkout.session.completed' });
              const intent = (await provider(`sessions/${sessionId}/pay`))?.payment_intent;
              if (typeof intent === 'string') {
                if (dispute) {
                  const opened = await provider(`payment_intents/${intent}/dispute`);
                  const taken = (opened?.balance_transactions as { amount: number; fee: number }[] | undefined)?.[0];
                  if (typeof opened?.id !== 'string' || !taken) return;
                  record.dispute = { id: opened.id, takenCents: -taken.amount + taken.fee };
                  if (closeAs !== undefined && (await provider(`disputes/${opened.id}/close`, { status: closeAs })))
                    record.dispute.closed = closeAs;
                } else await provider(`payment_intents/${intent}/refund`, { amount: 1 + rng.int(amountUsd * 100) });
                await sleep(rng.int(1_500));
              }
              await provider('release', { type: 'checkout.session.completed' });
            }),
          );
          break;
        }
        case 'auto-recharge': {
          // Turned on from several requests at once (a double click, two consoles): still one charge per crossing.
          const stored = await getAccount(target.deps, account.accountId).catch(() => undefined);
          if (!stored?.payment_method_id) break;
          const thresholdUsd = 20 + rng.int(200);
          const body = { enabled: true, threshold_usd: thresholdUsd, amount_usd: thresholdUsd + rng.int(50) };
          account.crossings += 1;
          for (let copy = 0; copy <= rng.int(4); copy++) track(configureAutoRecharge(target.deps, stored, body));
          break;
        }
        case 'crash':
          log(`  op ${op}: the service's process dies and comes back`);
          await target.crash();
          break;
      }
      // Paced so that creates answer while the run goes on: actions, reads and deletes need instances to act on.
      await sleep(100 + rng.int(200));
      if (op % 50 === 0) log(`  ${op}/${options.ops} operations`);
    }

    log('  faults off; letting every workflow end');
    await Promise.allSettled([...inFlight]);
    await target.simulator.control.faults({ fail_next: 0, latency_ms: 0, ssh_silent: false });
    await target.workflowFault('StartExecution', undefined);
    await provider('faults', { times: 0 });
    await provider('release', { type: 'checkout.session.completed' });
    await settle(target, log);
    // Webhooks lost to a crash or a stall are the top-up reconciler's to settle: told a time past their grace.
    await target.payments.settled();
    const later = { ...target.deps, clock: { now: () => new Date(Date.now() + 10 * 60_000) } };
    log(`  top-ups reconciled: ${JSON.stringify(await reconcileTopUps(later))}`);
    // The provider keeps retrying for days: every event no delivery of which was answered 2xx arrives once more.
    const undelivered = target.payments.events.filter((event) => !event.answers.some((status) => status >= 200 && status < 300));
    for (const event of undelivered) await provider(`events/${event.id}/resend`);
    log(`  payment events delivered again: ${undelivered.length}`);
    await reviewDueAccounts(target.deps);
    await replayUnanswered(target.deps, creates, accounts, create);
    const pausedAccounts = new Set<string>();
    for (const { accountId } of accounts) if ((await getAccount(target.deps, accountId))?.billing_paused) pausedAccounts.add(accountId);
    violations.push(
      ...(await checkInvariants({
        deps: target.deps,
        simulator: target.simulator,
        // Delivered at least once: a repeat carries the id of the event it repeats.
        events: () => [...new Map(receiver.received.map((d) => [d.event.id as string, d.event as ServiceEvent])).values()],
        accountIds: accounts.map((a) => a.accountId),
        pausedAccounts,
        creates,
      })),
      ...(await checkTopUps(target.deps, target.payments, topUps)),
      ...(await checkAutoRecharges(target.deps, target.payments, accounts)),
    );
    const unique = new Set(receiver.received.map((delivery) => delivery.event.id as string)).size;
    return {
      seed: options.seed,
      ops: options.ops,
      operations,
      answers,
      instances: accounts.reduce((sum, a) => sum + a.instances.length, 0),
      deliveries: { received: receiver.received.length, repeated: receiver.received.length - unique },
      violations,
      seconds: Math.round((performance.now() - started) / 1000),
    };
  } finally {
    await withTimeout(target.idle(), 90_000, 'workflows to end').catch(() => undefined);
    await receiver.close();
  }
}

/**
 * A create whose every answer was an unknown outcome, and that left an instance behind, is sent again with its key
 * once the service has settled: its key must replay that instance. (One that left nothing deployed nothing.) A claim
 * whose request died with the service's process is still in progress until it lapses (IDEMPOTENCY_LOCK_SECONDS, 60).
 */
async function replayUnanswered(
  deps: Deps,
  creates: readonly CreateRecord[],
  accounts: readonly Account[],
  create: (account: Account, record: CreateRecord, attempts: number) => Promise<void>,
): Promise<void> {
  const instances = await allInstances(deps);
  const deadline = Date.now() + 90_000;
  for (const record of creates) {
    if (record.instanceIds.length > 0) continue;
    if (!instances.some((i) => i.account_id === record.accountId && i.project_name === record.projectName)) continue;
    const account = accounts.find((a) => a.accountId === record.accountId)!;
    while (record.instanceIds.length === 0 && Date.now() < deadline) {
      await create(account, record, 1);
      if (record.instanceIds.length === 0) await sleep(2_000);
    }
  }
}

function weighted(draw: number): Operation {
  const total = OPERATIONS.reduce((sum, [, weight]) => sum + weight, 0);
  let left = draw * total;
  for (const [name, weight] of OPERATIONS) {
    if (left < weight) return name;
    left -= weight;
  }
  return 'read';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Seconds after which the service destroys an orphan, and concludes a server gone. */
const ORPHAN_GRACE_MS = Number(CHAOS_RUNTIME.env.ORPHAN_GRACE_SECONDS) * 1000;
const ABSENCE_WINDOW_MS = Number(CHAOS_RUNTIME.env.ABSENCE_WINDOW_SECONDS) * 1000;

/**
 * Waits for the workflows, then reconciles (with no grace: nothing new is starting) until a run repairs nothing and
 * suspects nothing. Each run is told a later time than the last, past the orphans' grace period and the absence
 * window, so that orphans go their whole slow way out (found and powered off, then destroyed) and absences conclude
 * (three reads that far apart). A tripped sweep guard is resumed, as its operator would after looking.
 */
async function settle(target: ChaosTarget, log: (line: string) => void): Promise<void> {
  let now = Date.now() + 3_600_000;
  for (let round = 1; round <= 16; round++) {
    await withTimeout(target.idle(), 90_000, 'workflows to end');
    const report = await reconcile(target.deps, now, 0);
    now += Math.max(ORPHAN_GRACE_MS, ABSENCE_WINDOW_MS) + 1_000;
    log(`  reconcile round ${round}: ${JSON.stringify(report)}`);
    if (report.sweepGuardHalted) {
      await resumeSweepGuard(target.deps);
      continue;
    }
    const repairs =
      report.deletesRestarted +
      report.provisionsStarted +
      report.provisionsFailed +
      report.actionsSettled +
      report.jobsEnded +
      report.leakedServersDestroyed +
      report.orphansFound +
      report.serversReadopted +
      report.absencesSuspected;
    const drift = Object.values(report.drift).reduce((sum, n) => sum + n, 0);
    if (repairs + drift === 0) {
      await withTimeout(target.idle(), 90_000, 'workflows to end');
      return;
    }
  }
}

async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
