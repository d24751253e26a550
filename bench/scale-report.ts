import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repositoryRoot } from '../infra/local/runtime';
import { METER_SHARD_TIMEOUT_SECONDS, workflows } from '../infra/workflows';
import { SHARD_ACCOUNT_CONCURRENCY } from '../shared/domain/billing';
import type { CapacityTally } from './capacity';
import type { prices as listPrices } from './cost';
import { hotItemsSection, type CreateRate } from './hot-items';

export interface ScaleMeasure {
  readonly ms: number;
  readonly tally: CapacityTally;
  /** What the work was about: instances listed, charged, or checked. */
  readonly items: number;
}

/** One shard of the meter, as its worker in the meter state machine charges it. */
export interface MeterShardMeasure extends ScaleMeasure {
  readonly shard: number;
}

export interface ScaleResults {
  readonly at: string;
  readonly seconds: number;
  readonly seeded: { readonly live: number; readonly deleted: number; readonly accounts: number };
  readonly target: { readonly live: number; readonly deleted: number };
  readonly prices: typeof listPrices;
  readonly lists: {
    readonly big: ScaleMeasure;
    readonly history: ScaleMeasure & { readonly deleted: number };
    readonly fresh: ScaleMeasure;
  };
  /** One reconciler run: nothing in flight, one slice of the fleet sweep (`pages` pages of `pageSize` servers). */
  readonly reconciler: ScaleMeasure & { readonly pages: number; readonly pageSize: number };
  /** The whole meter (its shards' sums): every live instance had an hour left to charge. */
  readonly meter: ScaleMeasure;
  /** Each shard of the meter, charged one after the other (DynamoDB Local applies transactions one at a time). */
  readonly meterShards: readonly MeterShardMeasure[];
  /** One consistent Scan of the whole instances table: what the meter and the reconciler each read per run before. */
  readonly scan: ScaleMeasure;
  /** Creates a second against the sharded capacity counters, by concurrent callers. */
  readonly creates: readonly CreateRate[];
}

const START = '<!-- scale: written by `npm run bench:scale` -->';
const END = '<!-- /scale -->';
const resultsFile = () => resolve(repositoryRoot, 'bench/results.md');

/** The scale section of bench/results.md as it stands, so that `npm run bench` keeps it when it rewrites the rest. */
export function currentScaleSection(): string {
  const text = existsSync(resultsFile()) ? readFileSync(resultsFile(), 'utf8') : '';
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  return start >= 0 && end > start ? text.slice(start, end + END.length) : '';
}

const n = (value: number, digits = 0) => value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const usd = (value: number) => `$${n(value, 2)}`;
const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;

/** One line of the measured table: what was done, on how many items, and what it cost DynamoDB and the clock. */
const measuredRow = (work: string, items: string | number, { tally, ms }: ScaleMeasure) =>
  row([work, items, tally.calls, n(tally.readUnits, 1), n(tally.writeUnits, 1), n(ms)]);

/** Runs per day of a job every five minutes; Lambda memory of the periodic functions (GB). */
const RUNS_PER_DAY = 288;
const LAMBDA_GB = 0.5;
/** A TransactWriteItems of three items on AWS, p50 (an assumption: single-digit ms per item write, twice for a transaction). */
const AWS_TRANSACTION_MS = 15;
/** Any other DynamoDB call on AWS, p50 (an assumption): a Query or BatchGetItem page, a GetItem, a single UpdateItem. */
const AWS_CALL_MS = 10;
/** Starting the execution, a Map iteration and a worker's cold start, before its first charge (an assumption). */
const AWS_FAN_OUT_OVERHEAD_MS = 2_000;
/** On-demand tables' default maximum throughput, per table (an adjustable quota). */
const TABLE_WRITE_UNITS_PER_SECOND = 40_000;
/** The meter's own tables, each written once per charge (ledger entry, balance, instance). */
const METER_TABLES = 3;
/** The meter state machine's bound on shards charged at once (its Map's MaxConcurrency). */
const METER_MAP_CONCURRENCY = (
  JSON.parse(readFileSync(resolve(repositoryRoot, workflows.meter.definitionFile), 'utf8')) as {
    States: { ChargeShards: { MaxConcurrency: number } };
  }
).States.ChargeShards.MaxConcurrency;

/**
 * The meter at the target size on AWS, from the measured shards: each worker's calls scaled to the target (its
 * instances grow with the fleet), its charges `SHARD_ACCOUNT_CONCURRENCY` at a time while its pages are read one
 * after the other beside them (whichever takes longer), after its first page; all shards in waves of the Map's
 * concurrency.
 */
function meterFanOut(r: ScaleResults) {
  const liveScale = r.target.live / r.seeded.live;
  const ops = (m: ScaleMeasure, name: string) => (m.tally.operations[name] ?? 0) * liveScale;
  const workerMs = (m: ScaleMeasure) => {
    const transactions = ops(m, 'TransactWriteItems');
    const pages = ops(m, 'Query');
    const batches = ops(m, 'BatchGetItem');
    const others = m.tally.calls * liveScale - transactions - pages - batches;
    const charging = (transactions * AWS_TRANSACTION_MS + others * AWS_CALL_MS) / SHARD_ACCOUNT_CONCURRENCY;
    const reading = (pages + batches) * AWS_CALL_MS;
    return Math.max(charging, reading) + 2 * AWS_CALL_MS;
  };
  const shards = r.meterShards.length;
  const waves = Math.ceil(shards / METER_MAP_CONCURRENCY);
  const slowest = r.meterShards.reduce((worst, m) => (workerMs(m) > workerMs(worst) ? m : worst));
  const worstWorkerMs = workerMs(slowest) + AWS_FAN_OUT_OVERHEAD_MS;
  const wallMs = waves * worstWorkerMs;
  const charges = r.meter.items * liveScale;
  const chargesPerSecond = charges / (wallMs / 1000);
  // Write units of one charge in each of its tables (measured in all: the transaction's items together).
  const unitsPerChargePerTable = r.meter.tally.writeUnits / Math.max(r.meter.items, 1) / METER_TABLES;
  const tableUnitsPerSecond = chargesPerSecond * unitsPerChargePerTable;
  const quotaBoundMs = ((charges * unitsPerChargePerTable) / TABLE_WRITE_UNITS_PER_SECOND) * 1000;
  const items = r.meterShards.map((m) => m.items);
  return {
    shards,
    waves,
    inFlight: Math.min(shards, METER_MAP_CONCURRENCY) * SHARD_ACCOUNT_CONCURRENCY,
    perShard: { least: Math.min(...items) * liveScale, most: Math.max(...items) * liveScale },
    worstWorkerMs,
    wallMs,
    chargesPerSecond,
    tableUnitsPerSecond,
    quotaBoundMs,
  };
}
/** DigitalOcean: 5,000 requests an hour per token. */
const TOKEN_LIMIT_PER_HOUR = 5_000;

export function scaleSection(r: ScaleResults): string {
  const p = r.prices;
  const liveScale = r.target.live / r.seeded.live;
  const totalScale = (r.target.live + r.target.deleted) / (r.seeded.live + r.seeded.deleted);
  const units = (t: CapacityTally) => t.readUnits * p.readUnit + t.writeUnits * p.writeUnit;
  const lambda = (ms: number) => (ms / 1000) * LAMBDA_GB * p.lambdaGbSecond;

  // The sweep: every live server's page read once an hour, split over the twelve runs of an hour.
  const checked = r.reconciler.pages * r.reconciler.pageSize;
  const pagesPerHour = Math.ceil(r.target.live / r.reconciler.pageSize);
  const perPage = { ms: r.reconciler.ms / r.reconciler.pages, cost: units(r.reconciler.tally) / r.reconciler.pages };
  const reconcilerRunMs = (perPage.ms * pagesPerHour) / 12;
  const reconcilerDay = { dynamodb: perPage.cost * pagesPerHour * 24, lambda: lambda(perPage.ms * pagesPerHour * 24) };
  const meterDay = { dynamodb: units(r.meter.tally) * liveScale * RUNS_PER_DAY, lambda: lambda(r.meter.ms * liveScale * RUNS_PER_DAY) };
  const scanCost = units(r.scan.tally) * totalScale;
  const scanMs = r.scan.ms * totalScale;
  // Before: the meter scanned once a run and charged the same instances; the reconciler scanned twice and listed every server.
  const beforeMeterDay = meterDay.dynamodb + scanCost * RUNS_PER_DAY;
  const beforeReconcilerDay = 2 * scanCost * RUNS_PER_DAY;

  const listRatio = r.lists.history.tally.readUnits / Math.max(r.lists.fresh.tally.readUnits, 0.5);
  const meterReadRatio = r.meter.tally.readUnits / Math.max(r.meter.items, 1);
  const sweepReadRatio = r.reconciler.tally.readUnits / Math.max(checked, 1);
  const projectedMeterMs = r.meter.ms * liveScale;
  // DynamoDB Local runs one transaction at a time, so this machine's rate says nothing about concurrency on AWS.
  const fanOut = meterFanOut(r);

  // Upstream calls an hour at the target: the sweep's pages, plus the provisions' calls (create, tag lookup, two status
  // checks, the action list of a lost answer now and then: five), and as many deletes (tag lookup, delete, check: three).
  const provisionsPerHour = 30_000 / 24;
  const upstreamPerHour = pagesPerHour + provisionsPerHour * 5 + provisionsPerHour * 3;
  const tokensNeeded = Math.ceil(upstreamPerHour / (0.8 * TOKEN_LIMIT_PER_HOUR));

  return [
    START,
    '## Scale: the periodic jobs and the list at a million instances',
    '',
    `Produced by \`npm run bench:scale\` on ${r.at} (${r.seconds} s). Seeded straight into DynamoDB Local: ${n(r.seeded.live)} live and ${n(r.seeded.deleted)} deleted instances across ${n(r.seeded.accounts)} accounts, and one simulator server per live instance. Read and write units are what DynamoDB reports (\`ReturnConsumedCapacity: TOTAL\`, table and indexes); times are this machine's against DynamoDB Local. Projections are linear, to ${n(r.target.live)} live and ${n(r.target.deleted)} deleted, at the list prices in bench/cost.ts.`,
    '',
    '### Measured',
    '',
    row(['work', 'items', 'DynamoDB calls', 'read units', 'write units', 'wall ms']),
    row(['---', '---', '---', '---', '---', '---']),
    measuredRow('list: account with 5 live, 0 deleted', r.lists.fresh.items, r.lists.fresh),
    measuredRow(`list: account with 5 live among ${n(r.lists.history.deleted)} of its own deleted`, r.lists.history.items, r.lists.history),
    measuredRow(`list: account with ${n(r.lists.big.items)} live`, r.lists.big.items, r.lists.big),
    measuredRow(`reconciler run (nothing in flight; sweep slice of ${r.reconciler.pages} pages)`, `${n(checked)} checked`, r.reconciler),
    measuredRow(
      `meter: its ${r.meterShards.length} shards, one after the other (every live instance owed an hour)`,
      `${n(r.meter.items)} charged`,
      r.meter,
    ),
    measuredRow(
      `meter: the largest shard (${n(Math.max(...r.meterShards.map((m) => m.items)))} charged; the smallest ${n(Math.min(...r.meterShards.map((m) => m.items)))})`,
      `${n(Math.max(...r.meterShards.map((m) => m.items)))} charged`,
      r.meterShards.reduce((most, m) => (m.items > most.items ? m : most)),
    ),
    measuredRow('before: one consistent Scan of the instances table', n(r.scan.items), r.scan),
    '',
    '### Targets',
    '',
    row(['target', 'measured', 'verdict']),
    row(['---', '---', '---']),
    row([
      'list read units, 5 live among 100,000 deleted ÷ 5 live and none deleted: ≤ 2×',
      `${n(listRatio, 2)}×`,
      listRatio <= 2 ? 'met' : 'missed',
    ]),
    row([
      'meter read units per run ≤ 1.5 × instances charged + a constant',
      `${n(meterReadRatio, 2)} per instance`,
      meterReadRatio <= 1.5 ? 'met' : 'missed',
    ]),
    row([
      'reconciler read units per run ≤ 1.5 × instances checked + a constant',
      `${n(sweepReadRatio, 2)} per instance`,
      sweepReadRatio <= 1.5 ? 'met' : 'missed',
    ]),
    row([
      'projected meter wall time at 1M live ≤ 60 s, with the fan-out',
      `${n(fanOut.wallMs / 1000)} s: ${fanOut.shards} shard workers, ${METER_MAP_CONCURRENCY} at once (${fanOut.waves} wave), ${n(fanOut.perShard.most)} charges in the largest shard, ${SHARD_ACCOUNT_CONCURRENCY} at once, at ${AWS_TRANSACTION_MS} ms a transaction and ${AWS_CALL_MS} ms any other call (assumed), the next page read while charging, ${n(AWS_FAN_OUT_OVERHEAD_MS / 1000)} s to start; ${n(projectedMeterMs / 1000)} s at this machine's serial rate`,
      fanOut.wallMs <= 60_000 ? 'met' : `missed by ${n(fanOut.wallMs / 60_000, 1)}×`,
    ]),
    row([
      `one shard worker at 1M live well under a minute (its timeout: ${METER_SHARD_TIMEOUT_SECONDS} s)`,
      `${n(fanOut.worstWorkerMs / 1000)} s for the largest shard`,
      fanOut.worstWorkerMs <= 30_000 ? 'met' : fanOut.worstWorkerMs <= 60_000 ? 'met, without much room' : 'missed',
    ]),
    row([
      `the meter's write rate within DynamoDB's default on-demand maximum of ${n(TABLE_WRITE_UNITS_PER_SECOND)} write units a second per table`,
      `${n(fanOut.inFlight)} charges in flight: ${n(fanOut.chargesPerSecond)} a second, ${n(fanOut.tableUnitsPerSecond)} write units a second on each of ledger, accounts and instances`,
      fanOut.tableUnitsPerSecond <= TABLE_WRITE_UNITS_PER_SECOND
        ? 'met'
        : `over: raise the per-table maximum (a quota) to ${n(Math.ceil(fanOut.tableUnitsPerSecond / 10_000) * 10_000)}; at the default, DynamoDB holds the meter to ${n(fanOut.quotaBoundMs / 1000)} s (${fanOut.quotaBoundMs <= 60_000 ? 'still within' : 'past'} the 60 s target) and throttles it`,
    ]),
    row([
      'upstream calls an hour at 1M live and 30,000 provisions a day ≤ 80 % of the tokens’ limit',
      `${n(upstreamPerHour)} an hour: ${n(upstreamPerHour / TOKEN_LIMIT_PER_HOUR, 1)} tokens’ worth`,
      `met with ${tokensNeeded} tokens configured: ${n((100 * upstreamPerHour) / (tokensNeeded * TOKEN_LIMIT_PER_HOUR))} % of their combined limit (the secret holds several, docs/deploying.md: "The upstream token")`,
    ]),
    '',
    `### Projected to ${n(r.target.live)} live and ${n(r.target.deleted)} deleted`,
    '',
    row(['periodic job', 'now: per run', 'now: cost a day', 'before (Scan): per run', 'before: cost a day']),
    row(['---', '---', '---', '---', '---']),
    row([
      'meter (every 5 min)',
      `${n((r.meter.ms * liveScale) / 1000)} s, ${n(r.meter.tally.readUnits * liveScale)} RRU, ${n(r.meter.tally.writeUnits * liveScale)} WRU`,
      usd(meterDay.dynamodb + meterDay.lambda),
      `+ a Scan of ${n(scanMs / 1000)} s and ${n(r.scan.tally.readUnits * totalScale)} RRU`,
      usd(beforeMeterDay),
    ]),
    row([
      'reconciler (every 5 min)',
      `${n(reconcilerRunMs / 1000)} s for ${n(pagesPerHour / 12)} pages (each server seen hourly)`,
      usd(reconcilerDay.dynamodb + reconcilerDay.lambda),
      `2 Scans: ${n((2 * scanMs) / 1000)} s, ${n(2 * r.scan.tally.readUnits * totalScale)} RRU, and every page listed`,
      usd(beforeReconcilerDay),
    ]),
    '',
    ...hotItemsSection(r.creates),
    '',
    `Per sweep page of ${r.reconciler.pageSize} servers: ${n(perPage.ms)} ms and ${usd(perPage.cost * 1000)} per 1,000 pages. The meter's cost is its charges: one transaction per instance and period (ledger entry, balance, instance), which is why charging per account instead is weighed in docs/billing.md.`,
    END,
  ].join('\n');
}

/** Writes the scale section into bench/results.md, replacing the last one (or after the rest). */
export function writeScaleSection(results: ScaleResults): void {
  const text = existsSync(resultsFile()) ? readFileSync(resultsFile(), 'utf8') : '';
  const previous = currentScaleSection();
  const section = scaleSection(results);
  writeFileSync(resultsFile(), previous ? text.replace(previous, section) : `${text.trimEnd()}\n\n${section}\n`);
  writeFileSync(resolve(repositoryRoot, 'bench/scale-results.json'), `${JSON.stringify(results, null, 2)}\n`);
}
