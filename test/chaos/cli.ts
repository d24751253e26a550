import './quiet';
import '../../infra/local/env-defaults';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { repositoryRoot } from '../../infra/local/runtime';
import { runChaos, type ChaosReport } from './chaos';
import { startChaosProcesses } from './processes';

/**
 * `npm run chaos -- --seed N --ops M`: one seeded chaos run, then its invariants. DynamoDB Local (on disk, so that it
 * can restart), the upstream simulator and the service each run in a process of their own.
 *   --seeds K        runs seeds N, N+1, … N+K-1, each in a fresh process, and prints a table
 *   --accounts A     accounts issuing requests (default 6; each may deploy 5 an hour)
 *   --data-dir DIR   keep the run's data (DynamoDB Local's, the service's stream position and queued deliveries; one
 *                    directory per seed), to inspect after the run; by default a temporary directory, removed
 *   --json           the report as JSON
 *   --verbose        the handlers' warnings and errors too (kept in .local/chaos/ for a seed of --seeds that
 *                    finds a violation)
 * Exits 1 when any invariant was violated.
 */
const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    ops: { type: 'string', default: '200' },
    seeds: { type: 'string', default: '1' },
    accounts: { type: 'string', default: '6' },
    'data-dir': { type: 'string' },
    json: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
  },
});

const logDir = resolve(repositoryRoot, '.local/chaos');
const seed = Number(values.seed);
const ops = Number(values.ops);
const seeds = Number(values.seeds);
for (const [name, value] of [
  ['seed', seed],
  ['ops', ops],
  ['seeds', seeds],
  ['accounts', Number(values.accounts)],
] as const) {
  if (!Number.isSafeInteger(value) || value < 0) {
    console.error(`--${name} must be a whole number`);
    process.exit(2);
  }
}

/** One seed in a fresh process, with the handlers' logs, which are kept when the run finds a violation. */
function runSeedInChild(s: number): ChaosReport | undefined {
  const args = [
    '--import',
    'tsx',
    resolve(import.meta.dirname, 'cli.ts'),
    '--seed',
    String(s),
    '--ops',
    String(ops),
    '--accounts',
    String(values.accounts),
    '--json',
    '--verbose',
  ];
  if (values['data-dir']) args.push('--data-dir', values['data-dir']);
  const child = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 << 20 });
  const lines = child.stdout.trim().split('\n');
  try {
    const report = JSON.parse(lines.at(-1) ?? '') as ChaosReport;
    if (report.violations.length === 0) return report;
    const logFile = resolve(logDir, `seed-${s}.log`);
    mkdirSync(logDir, { recursive: true });
    writeFileSync(logFile, [...lines.slice(0, -1), child.stderr].join('\n'));
    console.log(`  (the handlers' logs of seed ${s}: ${logFile})`);
    return report;
  } catch {
    console.log(`  seed ${s} did not finish (exit ${child.status}): ${child.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    return undefined;
  }
}

if (seeds > 1) {
  const reports: ChaosReport[] = [];
  let unfinished = 0;
  for (let s = seed; s < seed + seeds; s++) {
    // A run that could not even start (DynamoDB Local slow to come up on a busy machine) is tried once more.
    const report = runSeedInChild(s) ?? runSeedInChild(s);
    if (!report) {
      unfinished += 1;
      continue;
    }
    reports.push(report);
    console.log(
      `seed ${s}: ${report.ops} operations, ${report.instances} instances, ${report.seconds} s, ${report.violations.length} violation(s)`,
    );
    for (const violation of report.violations) console.log(`  ${violation}`);
  }
  const total = reports.reduce((sum, r) => sum + r.violations.length, 0);
  console.log(
    `${reports.length} seeds × ${ops} operations: ${total} violation(s)${unfinished ? `; ${unfinished} seed(s) did not finish` : ''}`,
  );
  process.exit(total > 0 || unfinished > 0 ? 1 : 0);
}

const dataDir = values['data-dir'] ? resolve(values['data-dir'], `seed-${seed}`) : mkdtempSync(join(tmpdir(), 'vps-chaos-'));
mkdirSync(dataDir, { recursive: true });
const target = await startChaosProcesses({ dataDir, verbose: values.verbose });
let report: ChaosReport;
try {
  report = await runChaos({
    seed,
    ops,
    target,
    accounts: Number(values.accounts),
    log: values.json ? undefined : (line) => console.log(line),
  });
} finally {
  await target.stop();
  if (!values['data-dir']) rmSync(dataDir, { recursive: true, force: true });
}
if (values.json) {
  console.log(JSON.stringify(report));
} else {
  console.log(
    `seed ${report.seed}: ${report.ops} operations (${JSON.stringify(report.operations)}), ${report.instances} instances, ${report.seconds} s`,
  );
  console.log(`webhook deliveries: ${report.deliveries.received} (${report.deliveries.repeated} repeated)`);
  console.log(`answers: ${JSON.stringify(report.answers)}`);
  console.log(report.violations.length === 0 ? 'no violation' : `${report.violations.length} violation(s):`);
  for (const violation of report.violations) console.log(`  ${violation}`);
}
process.exit(report.violations.length > 0 ? 1 : 0);
