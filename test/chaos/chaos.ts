import { randomBytes } from 'node:crypto';
import { startLocalRuntime, type LocalRuntime } from '../../infra/local/runtime';
import { issueApiKey, openAccount } from '../../shared/domain/accounts';
import { charge, deposit, runMeter } from '../../shared/domain/billing';
import { reconcile } from '../../shared/domain/reconciler';
import type { ServiceEvent } from '../../shared/schemas/events';
import { checkInvariants } from './invariants';

/**
 * A seeded chaos run: random creates, actions and deletes from several accounts, under random upstream faults (5xx
 * and 429 bursts, latency past every timeout), servers changed or destroyed behind the service's back, money running
 * out, and the service's process dying and coming back. Then the faults stop, the reconciler runs, and the
 * invariants are checked. The same seed makes the same choices (timings still vary from run to run).
 */
export interface ChaosOptions {
  readonly seed: number;
  readonly ops: number;
  /** Where to start the service; or `runtime`, a running one (started with CHAOS_RUNTIME), which is left running. */
  readonly dynamodbEndpoint?: string;
  readonly runtime?: LocalRuntime;
  readonly accounts?: number;
  /** How many times the service's process dies and comes back during the run (default: one per 100 operations). */
  readonly crashes?: number;
  readonly log?: (line: string) => void;
}

export interface ChaosReport {
  readonly seed: number;
  readonly ops: number;
  /** How often each kind of operation was chosen. */
  readonly operations: Record<string, number>;
  /** The service's answers by status code. */
  readonly answers: Record<string, number>;
  readonly instances: number;
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
  ['out-of-band', 8],
  ['meter', 6],
  ['reconcile', 4],
  ['money', 3],
  ['read', 12],
] as const;
type Operation = (typeof OPERATIONS)[number][0] | 'crash';

interface Account {
  readonly accountId: string;
  readonly apiKey: string;
  readonly instances: number[];
}

/** The service as a run needs it: short upstream timeouts and budgets, so every fault bites and every phase ends soon. */
export const CHAOS_RUNTIME = {
  bootMs: 400,
  actionMs: 200,
  waitMs: 100,
  retryMs: 30,
  schedules: false,
  env: {
    UPSTREAM_REQUEST_TIMEOUT_MS: '600',
    UPSTREAM_TIMEOUT_MS: '1500',
    LIVE_STATUS_TIMEOUT_MS: '300',
    UNKNOWN_OUTCOME_WINDOW_SECONDS: '2',
    PROVISION_TIMEOUT_SECONDS: '30',
    ACTION_TIMEOUT_SECONDS: '30',
  },
} as const;

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = performance.now();
  const log = options.log ?? (() => undefined);
  const rng = random(options.seed);
  if (!options.runtime && !options.dynamodbEndpoint) throw new Error('a chaos run needs a runtime or a DynamoDB endpoint');
  const runtime =
    options.runtime ??
    (await startLocalRuntime({
      ...CHAOS_RUNTIME,
      dynamodbEndpoint: options.dynamodbEndpoint!,
      tablePrefix: `chaos${randomBytes(4).toString('hex')}`,
    }));
  const events: ServiceEvent[] = [];
  runtime.events.subscribe(async (event) => void events.push(event));
  const operations: Record<string, number> = {};
  const answers: Record<string, number> = {};
  const violations: string[] = [];
  try {
    const accounts: Account[] = [];
    // Deploys are limited to 5 an hour per account: more accounts, more instances.
    for (let i = 0; i < (options.accounts ?? 6); i++) {
      const account = await openAccount({
        email: `chaos-${options.seed}-${i}-${randomBytes(3).toString('hex')}@example.com`,
        confirmed: true,
        suspended: false,
      });
      await deposit(account.account_id, 200_000_000);
      const { fullKey } = await issueApiKey(account.account_id, 'chaos');
      accounts.push({ accountId: account.account_id, apiKey: fullKey, instances: [] });
    }
    const crashes = options.crashes ?? Math.max(1, Math.floor(options.ops / 100));
    const crashAt = new Set(Array.from({ length: crashes }, () => 1 + rng.int(Math.max(1, options.ops - 1))));

    const call = async (account: Account, method: string, path: string, body?: unknown) => {
      const response = await fetch(`${runtime.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${account.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).catch(() => undefined);
      const status = response?.status ?? 'connection lost';
      answers[status] = (answers[status] ?? 0) + 1;
      const text = response ? await response.text() : '';
      if (response?.status === 500) violations.push(`${method} ${path} answered 500: ${text}`);
      return { status: response?.status ?? 0, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    };

    const inFlight = new Set<Promise<unknown>>();
    const track = (work: Promise<unknown>) => {
      const tracked = work
        .catch((error: unknown) => log(`  (an operation failed: ${error instanceof Error ? error.message : String(error)})`))
        .finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
    };

    for (let op = 1; op <= options.ops; op++) {
      const account = rng.pick(accounts)!;
      const instanceId = rng.pick(account.instances);
      let chosen: Operation = crashAt.has(op) ? 'crash' : weighted(rng.next());
      if ((chosen === 'action' || chosen === 'delete' || chosen === 'read') && instanceId === undefined) chosen = 'create';
      operations[chosen] = (operations[chosen] ?? 0) + 1;
      switch (chosen) {
        case 'create': {
          const flavor = rng.pick(FLAVORS)!;
          track(
            call(account, 'POST', '/api/v1/instances', { project_name: `chaos-${op}`, flavor }).then(({ status, body }) => {
              if (status === 202) account.instances.push(Number(body.instance_id));
            }),
          );
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
          await runtime.simulator.control.faults({
            fail_next: 1 + rng.int(4),
            status: rng.pick(FAULT_STATUSES)!,
            match: rng.pick(FAULT_MATCHES)!,
          });
          break;
        case 'latency':
          await runtime.simulator.control.faults({ latency_ms: 700 + rng.int(1_000), latency_match: rng.pick(FAULT_MATCHES)! });
          break;
        case 'faults-off':
          await runtime.simulator.control.faults({ fail_next: 0, latency_ms: 0 });
          break;
        case 'out-of-band': {
          const droplet = rng.pick(runtime.simulator.state().droplets);
          if (!droplet) break;
          const change = rng.pick(['power_off', 'power_on', 'resize', 'destroy'] as const)!;
          await runtime.simulator.control
            .outOfBand(droplet.id, change === 'resize' ? { type: 'resize', size: rng.pick(FLAVORS)! } : { type: change })
            .catch(() => undefined);
          break;
        }
        case 'meter':
          track(runMeter());
          break;
        case 'reconcile':
          track(reconcile(Date.now(), 5_000));
          break;
        case 'money':
          // Spend the balance down past zero (the billing pause powers servers off), then pay again.
          track(
            charge(account.accountId, 200_000_000, 'chaos').then(async () => {
              await sleep(rng.int(1_500));
              await deposit(account.accountId, 200_000_000);
            }),
          );
          break;
        case 'crash':
          log(`  op ${op}: the service's process dies and comes back`);
          await runtime.crashAndRestart();
          break;
      }
      await sleep(rng.int(60));
      if (op % 50 === 0) log(`  ${op}/${options.ops} operations`);
    }

    log('  faults off; letting every workflow end');
    await Promise.allSettled([...inFlight]);
    await runtime.simulator.control.faults({ fail_next: 0, latency_ms: 0 });
    await settle(runtime, log);
    await runMeter();
    violations.push(...(await checkInvariants({ runtime, events, accountIds: accounts.map((a) => a.accountId) })));
    return {
      seed: options.seed,
      ops: options.ops,
      operations,
      answers,
      instances: accounts.reduce((sum, a) => sum + a.instances.length, 0),
      violations,
      seconds: Math.round((performance.now() - started) / 1000),
    };
  } finally {
    await runtime.stepFunctions.idle();
    if (!options.runtime) await runtime.stop();
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

/** Waits for the workflows, then reconciles (with no grace: nothing new is starting) until a run repairs nothing. */
async function settle(runtime: LocalRuntime, log: (line: string) => void): Promise<void> {
  for (let round = 1; round <= 6; round++) {
    await withTimeout(runtime.stepFunctions.idle(), 90_000, 'workflows to end');
    const report = await reconcile(Date.now() + 3_600_000, 0);
    const repairs =
      report.deletesRestarted + report.provisionsFailed + report.actionsSettled + report.jobsEnded + report.leakedServersDestroyed;
    const drift = Object.values(report.drift).reduce((sum, n) => sum + n, 0);
    log(`  reconcile round ${round}: ${JSON.stringify(report)}`);
    if (repairs + drift === 0) {
      await withTimeout(runtime.stepFunctions.idle(), 90_000, 'workflows to end');
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
