import '../infra/local/env-defaults';
import { tableName } from '../shared/platform';
import type { Deps } from '../shared/domain/deps';
import { awsDeps } from '../shared/wiring/aws';
import { parseArgs } from 'node:util';
import { BatchWriteCommand, GetCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { applyBalanceRules, reviewDueAccounts } from '../shared/domain/billing';
import { balanceAt, burnRateOf } from '../shared/model/burn';
import { getAccount } from '../shared/store/accounts';
import { reviewShardOf } from '../shared/store/checkpoints';
import { sweepShardOf } from '../shared/model/convergence';
import { MAX_BILLED_INSTANCES } from '../shared/model/create';
import { catalog } from '../shared/model/flavors';
import { serviceTag, upstreamTagOf } from '../shared/domain/instances';
import { reconcile } from '../shared/domain/reconciler';
import { getInstanceItem, listOwnedInstances, updateInstanceAtVersion } from '../shared/store/instances';
import { instanceSchema } from '../shared/model/instance';
import { DigitalOceanDriver } from '../shared/upstream/digitalocean';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local';
import { localHandlerEnv, localTableNames } from '../infra/local/handler-env';
import { temporarySecretsKeyFile } from '../infra/local/secrets-key';
import { startSimulator } from '../infra/local/simulator';
import { createLocalTables } from '../infra/local/tables';
import { measure, type CapacityTally } from './capacity';
import { measureCreateRate } from './hot-items';
import { prices } from './cost';
import { writeScaleSection, type ScaleResults } from './scale-report';

/**
 * `npm run bench:scale`: seeds instances and their accounts' billing checkpoints straight into DynamoDB Local (sizes
 * from the command line), then measures billing's work (the daily statements, an idle review sweep, the settlement a
 * change of rate adds to its write, the pause at a projected zero), a reconciler run and two lists with the units
 * DynamoDB reports (`ReturnConsumedCapacity`), projects them to 1M live and 10M deleted instances, and writes the
 * figures into bench/results.md next to those of the per-period meter and of the design that scanned the table.
 */
const { values: args } = parseArgs({
  options: {
    // DynamoDB Local takes a few hundred instance writes a second on two cores: these defaults seed in about three
    // minutes and keep the run near ten; `--live 100000 --deleted 400000 --accounts 20000` is the full size.
    live: { type: 'string', default: '10000' },
    deleted: { type: 'string', default: '40000' },
    accounts: { type: 'string', default: '2000' },
    'sweep-pages': { type: 'string', default: '20' },
  },
});
const LIVE = Number(args.live);
const DELETED = Number(args.deleted);
const ACCOUNTS = Number(args.accounts);
/** The two list cases: an account with as many live instances as it may have billed, and one with 5 live among 100,000 of its own deleted. */
const BIG_LIVE = Math.min(MAX_BILLED_INSTANCES, Math.floor(LIVE / 2));
const HISTORY_DELETED = Math.min(100_000, Math.floor(DELETED / 2));
const TARGET = { live: 1_000_000, deleted: 10_000_000 };

const started = Date.now();
const log = (message: string) => process.stderr.write(`[bench:scale ${((Date.now() - started) / 1000).toFixed(0)}s] ${message}\n`);

const plan = catalog.get('s-1vcpu-2gb')!;
const HOUR = 3_600_000;
const now = Date.now();
/** The live instances' open segments are billed to 23:00 yesterday: every account owes its daily statement. */
const billedUntil = now - (now % (24 * HOUR)) - HOUR;
const hourlyMicros = Math.round(plan.hourly_price! * 1e6);
const iso = (ms: number) => new Date(ms).toISOString();

function instanceItem(instanceId: number, accountId: string, live: boolean, upstreamId: number | null) {
  const base = {
    instance_id: instanceId,
    vps_id: upstreamId === null ? '' : String(upstreamId),
    ipv4: live ? `10.${(instanceId >> 16) & 255}.${(instanceId >> 8) & 255}.${instanceId & 255}` : null,
    domain: `i${instanceId}.vps.example.net`,
    custom_domain: null,
    root_user: 'root',
    ssh_port: 22,
    project_name: `project-${instanceId}`,
    plan: { ...plan, flavor: 's-1vcpu-2gb' },
    created_at: iso(now - 30 * 24 * HOUR),
    ssh_key: { name: `key-${instanceId}`, fingerprint: 'SHA256:bench', public_key: 'ssh-ed25519 AAAAC3Nza bench', private_key: null },
    activated_at: iso(now - 30 * 24 * HOUR),
    sealed_secrets: null,
    account_id: accountId,
    upstream_id: upstreamId,
    pending_plan: null,
    active_job_id: null,
    quarantined_from: null,
    paused_by: null,
    create_requested_at: null,
    billing_ends_at: null,
    updated_at: iso(now - 2 * HOUR),
  };
  if (!live)
    return {
      ...base,
      status: 'destroyed',
      capacity_held: false,
      deleted_at: iso(now - 24 * HOUR),
      metered_until: iso(now - 24 * HOUR),
      seen_at: null,
      billing_segments: [],
      version: 9,
    };
  return {
    ...base,
    status: 'active',
    capacity_held: true,
    deleted_at: null,
    metered_until: iso(now - 30 * 24 * HOUR),
    seen_at: iso(now - HOUR),
    billing_segments: [{ start: iso(now - 30 * 24 * HOUR), end: null, hourly_micros: hourlyMicros, quarters: 4 }],
    version: 4,
    live_account_id: accountId,
    sweep_shard: sweepShardOf(instanceId),
    sweep_seen_at: iso(now - HOUR),
  };
}

async function writeAll(deps: Deps, table: string, items: Record<string, unknown>[]): Promise<void> {
  const batches: Record<string, unknown>[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  const write = async (batch: Record<string, unknown>[]) => {
    let pending: Record<string, unknown>[] = batch.map((Item) => ({ PutRequest: { Item } }));
    while (pending.length > 0) {
      const { UnprocessedItems } = await deps.dynamo.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = (UnprocessedItems?.[table] ?? []) as Record<string, unknown>[];
    }
  };
  const workers = Array.from({ length: 8 }, async () => {
    for (let batch = batches.shift(); batch; batch = batches.shift()) await write(batch);
  });
  await Promise.all(workers);
}

/** Which account each instance belongs to: the two list cases' accounts first, the rest spread evenly. */
function owners() {
  const big = 'acct-big';
  const history = 'acct-history';
  const fresh = 'acct-fresh';
  const spread = (n: number) => `acct-${n % (ACCOUNTS - 3)}`;
  const live = (i: number) => (i < BIG_LIVE ? big : i < BIG_LIVE + 5 ? history : i < BIG_LIVE + 10 ? fresh : spread(i));
  const deleted = (i: number) => (i < HISTORY_DELETED ? history : spread(i));
  const accounts = [big, history, fresh, ...Array.from({ length: ACCOUNTS - 3 }, (_, n) => `acct-${n}`)];
  return { big, history, fresh, live, deleted, accounts };
}

async function seed(deps: Deps, simulatorUrl: string) {
  const who = owners();
  log(`seeding ${who.accounts.length} accounts with their checkpoints`);
  const burning = new Map<string, Record<string, unknown>>();
  for (let i = 0; i < LIVE; i++) {
    const account = who.live(i);
    burning.set(account, {
      ...burning.get(account),
      [String(i + 1)]: { start: iso(now - 30 * 24 * HOUR), hourly_micros: hourlyMicros, quarters: 4, billed_until: iso(billedUntil) },
    });
  }
  await writeAll(
    deps,
    tableName(deps, 'accounts'),
    who.accounts.map((account_id) => ({
      account_id,
      email: `${account_id}@example.com`,
      confirmed: true,
      suspended: false,
      deleted_at: null,
      balance: 1_000_000_000,
      total_deposited: 1_000_000_000,
      billing_paused: false,
      created_at: iso(now - 60 * 24 * HOUR),
      balance_notice: 'none',
      billing_version: 1,
      ...(burning.has(account_id)
        ? { burning: burning.get(account_id), review_at: iso(billedUntil + HOUR), review_shard: reviewShardOf(account_id) }
        : {}),
    })),
  );
  log(`creating ${LIVE} servers upstream`);
  // Straight to the simulator: seeding is not the service's work, so it takes nothing from the request budget.
  const driver = new DigitalOceanDriver({ baseUrl: simulatorUrl, token: 'bench-token', timeoutMs: 10_000 });
  const serverIds: number[] = new Array<number>(LIVE);
  const next = { i: 0 };
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next.i++; i < LIVE; i = next.i++) {
        const server = await driver.createServer({
          name: `vps-${i + 1}`,
          tags: [serviceTag(deps), upstreamTagOf(deps, i + 1)],
          size: 's-1vcpu-2gb',
          image: 'ubuntu-24-04-x64',
          userData: '',
        });
        serverIds[i] = server.id;
      }
    }),
  );
  log(`seeding ${LIVE} live and ${DELETED} deleted instances`);
  await writeAll(
    deps,
    tableName(deps, 'instances'),
    Array.from({ length: LIVE }, (_, i) => instanceItem(i + 1, who.live(i), true, serverIds[i]!)),
  );
  for (let start = 0; start < DELETED; start += 50_000) {
    const count = Math.min(50_000, DELETED - start);
    await writeAll(
      deps,
      tableName(deps, 'instances'),
      Array.from({ length: count }, (_, k) => instanceItem(LIVE + start + k + 1, who.deleted(start + k), false, null)),
    );
    log(`  ${start + count} deleted seeded`);
  }
  return who;
}

async function main() {
  const dynamodb = await startDynamoDbLocal();
  const simulator = await startSimulator({ bootMs: 0, token: 'bench-token', maxDroplets: LIVE });
  const secretsKey = temporarySecretsKeyFile();
  const prefix = `scale${Date.now().toString(36)}`;
  const deps = awsDeps({
    ...localHandlerEnv({
      dynamodbEndpoint: dynamodb.endpoint,
      sfnEndpoint: 'http://127.0.0.1:9',
      simulatorUrl: simulator.url,
      upstreamToken: 'bench-token',
      tablePrefix: prefix,
      secretsKeyFile: secretsKey.path,
    }),
    // The simulator has no rate limit: the budget is sized for it, as in the local runtime (its calls are still taken).
    SWEEP_PAGES_PER_RUN: args['sweep-pages'],
    UPSTREAM_BUDGET_PER_HOUR: '36000000',
    UPSTREAM_BUDGET_BURST: '100000',
  });
  try {
    await createLocalTables(dynamodb.endpoint, localTableNames(prefix));
    const who = await seed(deps, simulator.url);

    log('list: an account with many live instances');
    const bigList = await measure(deps, () => listOwnedInstances(deps, who.big));
    log('list: an account with 5 live among its deleted history');
    const historyList = await measure(deps, () => listOwnedInstances(deps, who.history));
    const freshList = await measure(deps, () => listOwnedInstances(deps, who.fresh));

    log('reconciler run');
    const listCalls = () => simulator.state().calls['GET /v2/droplets'] ?? 0;
    const listedBefore = listCalls();
    const reconcilerRun = await measure(deps, () => reconcile(deps, now));
    const pages = listCalls() - listedBefore;
    log('billing: the daily statements, from the review sweep');
    const statements = await measure(deps, () => reviewDueAccounts(deps));
    log('billing: an idle review sweep (nothing due)');
    const idleSweep = await measure(deps, () => reviewDueAccounts(deps));
    log('billing: the settlement a change of rate adds to its write');
    // Instances of ordinary accounts (five each), not of the three list cases' accounts.
    const ordinary = LIVE - BIG_LIVE - 10;
    const sample = Array.from(
      { length: Math.min(SETTLED, ordinary) },
      (_, k) => BIG_LIVE + 11 + Math.floor((k * ordinary) / Math.min(SETTLED, ordinary)),
    );
    const change = (changes: Parameters<typeof updateInstanceAtVersion>[2]['changes']) => async () => {
      for (const id of sample) {
        const instance = (await getInstanceItem(deps, id))!;
        if (!(await updateInstanceAtVersion(deps, instance, { changes }))) throw new Error(`instance ${id} changed under the bench`);
      }
    };
    const withoutRate = await measure(deps, change({ project_name: 'renamed' }));
    const withRate = await measure(deps, change({ status: 'stopped', paused_by: 'user' }));
    log('billing: 32 changes of rate at once on one account (its checkpoint contended)');
    const hot = (await listOwnedInstances(deps, who.big)).filter((i) => i.paused_by === null).slice(0, HOT_CHANGES);
    const contended = await measure(deps, () =>
      Promise.all(
        hot.map(async (read) => {
          for (let instance = read; ; instance = (await getInstanceItem(deps, read.instance_id))!) {
            if (await updateInstanceAtVersion(deps, instance, { changes: { status: 'stopped', paused_by: 'user' } })) return;
          }
        }),
      ),
    );
    log('billing: the pause at a projected zero, from the review sweep');
    const pauseLagMs = await measurePauseLag(deps, who.fresh);

    log('the scanning design: one consistent Scan of the instances table');
    const scan = await measure(deps, async () => {
      let items = 0;
      let start: Record<string, unknown> | undefined;
      do {
        const page = await deps.dynamo.send(
          new ScanCommand({ TableName: tableName(deps, 'instances'), ConsistentRead: true, ExclusiveStartKey: start }),
        );
        items += page.Count ?? 0;
        start = page.LastEvaluatedKey;
      } while (start);
      return items;
    });

    log('hot items: creates against the sharded capacity counters');
    const template = instanceSchema.parse({
      ...instanceItem(0, who.fresh, true, null),
      status: 'pending',
      billing_segments: [],
      metered_until: null,
      seen_at: null,
      activated_at: null,
      version: 1,
    });
    const creates = [];
    for (const workers of [1, 8, 32]) creates.push(await measureCreateRate(deps, template, 10_000_000 + workers * 1_000_000, workers, 8));

    const results: ScaleResults = {
      at: new Date().toISOString(),
      seconds: Math.round((Date.now() - started) / 1000),
      seeded: { live: LIVE, deleted: DELETED, accounts: ACCOUNTS },
      target: TARGET,
      prices,
      lists: {
        big: { ...pick(bigList), items: bigList.result.length },
        history: { ...pick(historyList), items: historyList.result.length, deleted: HISTORY_DELETED },
        fresh: { ...pick(freshList), items: freshList.result.length },
      },
      reconciler: { ...pick(reconcilerRun), items: pages * 200, pages, pageSize: 200 },
      billing: {
        statements: { ...pick(statements), items: statements.result.reviewed },
        idleSweep: { ...pick(idleSweep), items: 0 },
        settlements: { withRate: { ...pick(withRate), items: sample.length }, withoutRate: { ...pick(withoutRate), items: sample.length } },
        contended: { ...pick(contended), items: hot.length },
        pauseLagMs,
      },
      scan: { ...pick(scan), items: scan.result },
      creates,
    };
    writeScaleSection(results);
    log('written to bench/results.md');
  } finally {
    secretsKey.remove();
    await simulator.close();
    await dynamodb.stop();
  }
}

/** Changes of rate measured, spread over the live instances; and at once on one account. */
const SETTLED = 500;
const HOT_CHANGES = 32;

/**
 * How long after its projected zero an account is paused by the review sweep: the account's balance is set to last
 * about five seconds at its rate, reviewed (which projects it), and the sweep is run once, as its schedule runs it.
 */
async function measurePauseLag(deps: Deps, accountId: string): Promise<number> {
  const account = (await getAccount(deps, accountId))!;
  const perSecond = burnRateOf(account.burning) / 3600;
  const settled = account.balance - balanceAt(account, Date.now());
  await deps.dynamo.send(
    new UpdateCommand({
      TableName: tableName(deps, 'accounts'),
      Key: { account_id: accountId },
      UpdateExpression: 'SET balance = :balance',
      ExpressionAttributeValues: { ':balance': settled + Math.round(5 * perSecond) },
    }),
  );
  const projected = Date.parse((await applyBalanceRules(deps, accountId)).review_at!);
  await reviewDueAccounts(deps);
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'accounts'), Key: { account_id: accountId }, ConsistentRead: true }),
  );
  if (Item?.billing_paused !== true) throw new Error('the account was not paused');
  return Date.parse(String(Item.billing_paused_at)) - projected;
}

const pick = ({ ms, tally }: { ms: number; tally: CapacityTally }) => ({ ms, tally });
await main();
