import '../infra/local/env-defaults';
import { tableName } from '../shared/platform';
import type { Deps } from '../shared/domain/deps';
import { awsDeps } from '../shared/wiring/aws';
import { parseArgs } from 'node:util';
import { BatchWriteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { meterShard } from '../shared/domain/billing';
import { METER_SHARDS, meterShardOf } from '../shared/model/billing-segments';
import { sweepShardOf } from '../shared/model/convergence';
import { catalog } from '../shared/model/flavors';
import { serviceTag, upstreamTagOf } from '../shared/domain/instances';
import { reconcile } from '../shared/domain/reconciler';
import { listOwnedInstances } from '../shared/store/instances';
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
import { writeScaleSection, type MeterShardMeasure, type ScaleResults } from './scale-report';

/**
 * `npm run bench:scale`: seeds instances straight into DynamoDB Local (sizes from the command line), then measures the meter (each
 * shard as its worker charges it), a reconciler run and two lists with the units DynamoDB reports
 * (`ReturnConsumedCapacity`), projects them to 1M live and 10M deleted instances, and writes the figures into
 * bench/results.md next to those of the design that scanned the instances table.
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
/** The two list cases: an account with 5,000 live instances, and one with 5 live among 100,000 of its own deleted. */
const BIG_LIVE = Math.min(5_000, Math.floor(LIVE / 2));
const HISTORY_DELETED = Math.min(100_000, Math.floor(DELETED / 2));
const TARGET = { live: 1_000_000, deleted: 10_000_000 };

const started = Date.now();
const log = (message: string) => process.stderr.write(`[bench:scale ${((Date.now() - started) / 1000).toFixed(0)}s] ${message}\n`);

const plan = catalog.get('s-1vcpu-2gb')!;
const HOUR = 3_600_000;
const now = Date.now();
const periodEnd = now - (now % 300_000);
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
    // An hour left to charge, at the plan's running rate.
    metered_until: iso(periodEnd - HOUR),
    seen_at: iso(now - HOUR),
    billing_segments: [{ start: iso(now - 30 * 24 * HOUR), end: null, hourly_micros: Math.round(plan.hourly_price! * 1e6), quarters: 4 }],
    version: 4,
    live_account_id: accountId,
    meter_shard: meterShardOf(instanceId),
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
  log(`seeding ${who.accounts.length} accounts`);
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
    log('meter: each shard as its worker in the meter state machine charges it');
    const meterShards: MeterShardMeasure[] = [];
    for (let shard = 0; shard < METER_SHARDS; shard++) {
      const run = await measure(deps, () => meterShard(deps, shard, now, 'bench:scale'));
      meterShards.push({ shard, ...pick(run), items: run.result.periodsCharged });
    }
    const meterRun = { ms: sum(meterShards.map((m) => m.ms)), tally: mergeTallies(meterShards.map((m) => m.tally)) };
    const meterCharged = sum(meterShards.map((m) => m.items));

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
      meter: { ...meterRun, items: meterCharged },
      meterShards,
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

const pick = ({ ms, tally }: { ms: number; tally: CapacityTally }) => ({ ms, tally });
const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

/** The sum of several tallies. */
function mergeTallies(tallies: readonly CapacityTally[]): CapacityTally {
  const merged: CapacityTally = { calls: 0, readUnits: 0, writeUnits: 0, operations: {} };
  for (const tally of tallies) {
    merged.calls += tally.calls;
    merged.readUnits += tally.readUnits;
    merged.writeUnits += tally.writeUnits;
    for (const [operation, count] of Object.entries(tally.operations))
      merged.operations[operation] = (merged.operations[operation] ?? 0) + count;
  }
  return merged;
}

await main();
