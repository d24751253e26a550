import './quiet';
import '../../infra/local/env-defaults';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local';
import { runChaos, type ChaosReport } from './chaos';

/**
 * `npm run chaos -- --seed N --ops M`: one seeded chaos run on its own DynamoDB Local, then its invariants.
 *   --seeds K        runs seeds N, N+1, … N+K-1, each in a fresh process, and prints a table
 *   --accounts A     accounts issuing requests (default 6; each may deploy 5 an hour)
 *   --data-dir DIR   keep DynamoDB Local's data on disk (one directory per seed), to inspect after the run
 *   --json           the report as JSON
 *   --verbose        the handlers' warnings and errors too
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

const seed = Number(values.seed);
const ops = Number(values.ops);
const seeds = Number(values.seeds);
for (const [name, value] of [['seed', seed], ['ops', ops], ['seeds', seeds], ['accounts', Number(values.accounts)]] as const) {
  if (!Number.isSafeInteger(value) || value < 0) {
    console.error(`--${name} must be a whole number`);
    process.exit(2);
  }
}

if (seeds > 1) {
  const reports: ChaosReport[] = [];
  for (let s = seed; s < seed + seeds; s++) {
    const args = ['--import', 'tsx', resolve(import.meta.dirname, 'cli.ts'), '--seed', String(s), '--ops', String(ops), '--accounts', String(values.accounts), '--json'];
    if (values['data-dir']) args.push('--data-dir', values['data-dir']);
    const child = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
    const report = JSON.parse(child.stdout.trim().split('\n').at(-1) ?? '{}') as ChaosReport;
    reports.push(report);
    console.log(`seed ${s}: ${report.ops} operations, ${report.instances} instances, ${report.seconds} s, ${report.violations.length} violation(s)`);
    for (const violation of report.violations) console.log(`  ${violation}`);
  }
  const total = reports.reduce((sum, r) => sum + r.violations.length, 0);
  console.log(`${reports.length} seeds × ${ops} operations: ${total} violation(s)`);
  process.exit(total > 0 ? 1 : 0);
}

const dataDir = values['data-dir'] ? resolve(values['data-dir'], `seed-${seed}`) : undefined;
if (dataDir) mkdirSync(dataDir, { recursive: true });
const dynamodb = await startDynamoDbLocal({ dataDir });
let report: ChaosReport;
try {
  report = await runChaos({
    seed,
    ops,
    accounts: Number(values.accounts),
    dynamodbEndpoint: dynamodb.endpoint,
    log: values.json ? undefined : (line) => console.log(line),
  });
} finally {
  await dynamodb.stop();
}
if (values.json) {
  console.log(JSON.stringify(report));
} else {
  console.log(`seed ${report.seed}: ${report.ops} operations (${JSON.stringify(report.operations)}), ${report.instances} instances, ${report.seconds} s`);
  console.log(`answers: ${JSON.stringify(report.answers)}`);
  console.log(report.violations.length === 0 ? 'no violation' : `${report.violations.length} violation(s):`);
  for (const violation of report.violations) console.log(`  ${violation}`);
}
process.exit(report.violations.length > 0 ? 1 : 0);
