import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repositoryRoot } from '../infra/local/runtime';
import { REVIEW_LOOKAHEAD_MS } from '../shared/domain/billing';
import type { CapacityTally } from './capacity';
import type { prices as listPrices } from './cost';
import { hotItemsSection, type CreateRate } from './hot-items';

export interface ScaleMeasure {
  readonly ms: number;
  readonly tally: CapacityTally;
  /** What the work was about: instances listed, changed, or checked; accounts reviewed. */
  readonly items: number;
}

/** Billing by checkpoints: what it does without a tick. */
export interface BillingMeasures {
  /** One review sweep with every account owing its daily statement (one transaction per account). */
  readonly statements: ScaleMeasure;
  /** One review sweep with nothing due: its index's shards read, and the old meter's (empty) index. */
  readonly idleSweep: ScaleMeasure;
  /** Changes of instances of ordinary accounts, with a change of rate (settled on the account) and without (a rename). */
  readonly settlements: { readonly withRate: ScaleMeasure; readonly withoutRate: ScaleMeasure };
  /** Changes of rate of one account's instances, all at once: its checkpoint's version serialises them. */
  readonly contended: ScaleMeasure;
  /** How long after its projected zero an account was paused by one run of the review sweep. */
  readonly pauseLagMs: number;
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
  readonly billing: BillingMeasures;
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

/** Runs per day of a job every five minutes, and of one every minute; Lambda memory of the periodic functions (GB). */
const RUNS_PER_DAY = 288;
const SWEEPS_PER_DAY = 1_440;
const LAMBDA_GB = 0.5;
/** On-demand tables' default maximum throughput, per table (an adjustable quota). */
const TABLE_WRITE_UNITS_PER_SECOND = 40_000;
/** Accounts at the target size (five live instances each). */
const TARGET_ACCOUNTS = 100_000;
/** Changes of rate per live instance a day (stated, not measured): a power off or on of every server every day. */
const RATE_CHANGES_PER_INSTANCE_DAY = 1;
/** The busiest second's share of a day's changes of rate (stated): ten times the average rate. */
const PEAK_FACTOR = 10;
/** The daily statements are due spread over the hour after midnight (by account): that hour's rate. */
const STATEMENTS_PER_SECOND = TARGET_ACCOUNTS / 3_600;
/**
 * The per-period meter, as last measured by this bench (bench/scale-results.json of 2026-11-24, commit 9c546ad):
 * 10,000 charges took 10,056 read and 60,032 write units; every live instance was charged every 5 minutes.
 */
const PER_PERIOD_METER = { charges: 10_000, readUnits: 10_056, writeUnits: 60_032, ms: 35_664 } as const;

/** DigitalOcean: 5,000 requests an hour per token. */
const TOKEN_LIMIT_PER_HOUR = 5_000;

export function scaleSection(r: ScaleResults): string {
  const p = r.prices;
  const totalScale = (r.target.live + r.target.deleted) / (r.seeded.live + r.seeded.deleted);
  const units = (t: CapacityTally) => t.readUnits * p.readUnit + t.writeUnits * p.writeUnit;
  const lambda = (ms: number) => (ms / 1000) * LAMBDA_GB * p.lambdaGbSecond;

  // The sweep: every live server's page read once an hour, split over the twelve runs of an hour.
  const checked = r.reconciler.pages * r.reconciler.pageSize;
  const pagesPerHour = Math.ceil(r.target.live / r.reconciler.pageSize);
  const perPage = { ms: r.reconciler.ms / r.reconciler.pages, cost: units(r.reconciler.tally) / r.reconciler.pages };
  const reconcilerRunMs = (perPage.ms * pagesPerHour) / 12;
  const reconcilerDay = { dynamodb: perPage.cost * pagesPerHour * 24, lambda: lambda(perPage.ms * pagesPerHour * 24) };
  const scanCost = units(r.scan.tally) * totalScale;
  const scanMs = r.scan.ms * totalScale;
  // Before: the reconciler scanned twice a run and listed every server.
  const beforeReconcilerDay = 2 * scanCost * RUNS_PER_DAY;

  // Billing by checkpoints at the target: the minute sweep, one statement per account a day, and each change of rate's
  // settlement (what it adds to the change's own write: the account read and written, the piece booked).
  const b = r.billing;
  const accountScale = TARGET_ACCOUNTS / Math.max(b.statements.items, 1);
  const statementsDay = { dynamodb: units(b.statements.tally) * accountScale, lambda: lambda(b.statements.ms * accountScale) };
  const sweepsDay = { dynamodb: units(b.idleSweep.tally) * SWEEPS_PER_DAY, lambda: lambda(b.idleSweep.ms * SWEEPS_PER_DAY) };
  const perChange = (m: ScaleMeasure) => ({
    read: m.tally.readUnits / m.items,
    write: m.tally.writeUnits / m.items,
    cost: units(m.tally) / m.items,
  });
  const settle = perChange(b.settlements.withRate);
  const plain = perChange(b.settlements.withoutRate);
  const settlementCost = settle.cost - plain.cost;
  const changesPerDay = r.target.live * RATE_CHANGES_PER_INSTANCE_DAY;
  const settlementsDay = settlementCost * changesPerDay;
  const billingDay = statementsDay.dynamodb + statementsDay.lambda + sweepsDay.dynamodb + sweepsDay.lambda + settlementsDay;
  const peakChangesPerSecond = (changesPerDay / 86_400) * PEAK_FACTOR;
  const peakSettlementUnits = peakChangesPerSecond * (settle.write - plain.write);
  const statementUnits = b.statements.tally.writeUnits / Math.max(b.statements.items, 1);
  const peakStatementUnits = STATEMENTS_PER_SECOND * statementUnits;
  // The per-period meter: every live instance charged every five minutes, at the units it was measured at.
  const meterCharges = r.target.live * RUNS_PER_DAY;
  const meterDay =
    ((PER_PERIOD_METER.readUnits * p.readUnit + PER_PERIOD_METER.writeUnits * p.writeUnit) / PER_PERIOD_METER.charges) * meterCharges +
    lambda((PER_PERIOD_METER.ms / PER_PERIOD_METER.charges) * meterCharges);
  // At the 32,000 charges a second its fan-out ran at (512 in flight, 15 ms each).
  const meterUnitsPerSecondPerTable = (PER_PERIOD_METER.writeUnits / PER_PERIOD_METER.charges / 3) * 32_000;

  const listRatio = r.lists.history.tally.readUnits / Math.max(r.lists.fresh.tally.readUnits, 0.5);
  const sweepReadRatio = r.reconciler.tally.readUnits / Math.max(checked, 1);

  // Upstream calls an hour at the target: the sweep's pages, plus the provisions' calls (create, tag lookup, two status
  // checks, the action list of a lost answer now and then: five), and as many deletes (tag lookup, delete, check: three).
  const provisionsPerHour = 30_000 / 24;
  const upstreamPerHour = pagesPerHour + provisionsPerHour * 5 + provisionsPerHour * 3;
  const tokensNeeded = Math.ceil(upstreamPerHour / (0.8 * TOKEN_LIMIT_PER_HOUR));

  return [
    START,
    '## Scale: billing, the periodic jobs and the list at a million instances',
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
      `review sweep: every account's daily statement (${n(r.seeded.live)} live instances)`,
      `${n(b.statements.items)} accounts`,
      b.statements,
    ),
    measuredRow('review sweep: nothing due', '-', b.idleSweep),
    measuredRow(
      'changes of rate (power off): the change and its settlement',
      `${n(b.settlements.withRate.items)} instances`,
      b.settlements.withRate,
    ),
    measuredRow(
      `changes of rate of one account's instances, ${b.contended.items} at once (its checkpoint contended)`,
      `${n(b.contended.items)} instances`,
      b.contended,
    ),
    measuredRow(
      'changes without a change of rate (a rename), for the difference',
      `${n(b.settlements.withoutRate.items)} instances`,
      b.settlements.withoutRate,
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
      `billing cost a day at ${n(r.target.live)} live in ${n(TARGET_ACCOUNTS)} accounts, ${RATE_CHANGES_PER_INSTANCE_DAY} change(s) of rate per instance a day (stated) ≤ $5`,
      `${usd(billingDay)}: sweeps ${usd(sweepsDay.dynamodb + sweepsDay.lambda)}, statements ${usd(statementsDay.dynamodb + statementsDay.lambda)}, settlements ${usd(settlementsDay)} (${n(settle.read - plain.read, 2)} read and ${n(settle.write - plain.write, 2)} write units more per change); the per-period meter: ${usd(meterDay)}`,
      billingDay <= 5 ? 'met' : 'missed',
    ]),
    row([
      'contention on a hot account: changes of rate of one account at once all land, each read and written again at most a few times',
      `${n(b.contended.items)} at once on an account with ${n(r.lists.big.items)} billed instances: all landed, ${n((b.contended.tally.operations.GetItem ?? 0) / b.contended.items, 1)} reads per change (2 uncontended: each further one is a retry on a moved checkpoint), ${n(b.contended.tally.writeUnits / b.contended.items)} write units per change (its checkpoint item is that large)`,
      (b.contended.tally.operations.GetItem ?? 0) / b.contended.items <= 32 ? 'met' : 'missed',
    ]),
    row([
      'no per-instance periodic write',
      `periodic writes: one statement per account a day (${n(statementUnits, 1)} write units each); none per instance; the per-period meter wrote ${n(PER_PERIOD_METER.writeUnits / PER_PERIOD_METER.charges, 1)} units per instance every 5 minutes`,
      'met',
    ]),
    row([
      `write units a second at peak within DynamoDB's default on-demand maximum of ${n(TABLE_WRITE_UNITS_PER_SECOND)} per table`,
      `changes of rate at ${PEAK_FACTOR}× their average (${n(peakChangesPerSecond)} a second): ${n(peakSettlementUnits)} units a second more; the statements in the hour after midnight: ${n(peakStatementUnits)} a second; the per-period meter: ${n(meterUnitsPerSecondPerTable)} on each of its three tables`,
      Math.max(peakSettlementUnits, peakStatementUnits) <= TABLE_WRITE_UNITS_PER_SECOND ? 'met' : 'missed',
    ]),
    row([
      'an account paused within 60 s of its projected zero',
      `${n(b.pauseLagMs / 1000, 1)} s by one run of the review sweep here; at most the look-ahead (${n(REVIEW_LOOKAHEAD_MS / 1000)} s) plus a review with a sweep a minute`,
      b.pauseLagMs <= 60_000 ? 'met' : 'missed',
    ]),
    row([
      'reconciler read units per run ≤ 1.5 × instances checked + a constant',
      `${n(sweepReadRatio, 2)} per instance`,
      sweepReadRatio <= 1.5 ? 'met' : 'missed',
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
      'billing (review sweep every minute; statements daily; settlements with changes)',
      `${n(b.idleSweep.ms)} ms and ${n(b.idleSweep.tally.calls)} calls per idle sweep`,
      usd(billingDay),
      `per-period meter: ${n(r.target.live)} transactions every 5 minutes`,
      usd(meterDay),
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
    `Per sweep page of ${r.reconciler.pageSize} servers: ${n(perPage.ms)} ms and ${usd(perPage.cost * 1000)} per 1,000 pages. Billing follows events: a change of rate settles in its own write, and nothing is written while time passes but one statement per account a day (docs/billing.md).`,
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
