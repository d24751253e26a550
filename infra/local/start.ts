import './env-defaults';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startDynamoDbLocal } from './dynamodb-local';
import { repositoryRoot, startLocalRuntime } from './runtime';
import { seedDemoAccount } from './seed';

/**
 * `npm start`: the whole service on this machine, no AWS account, no network.
 *   --data-dir DIR   keep DynamoDB data across restarts (default: in memory)
 *   --fast           upstream servers boot in about 1 s instead of about 20 s
 *   --port N         gateway port (default PORT or 8080)
 */
const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    fast: { type: 'boolean', default: false },
    port: { type: 'string' },
  },
});

const started = performance.now();
const port = Number(values.port ?? process.env.PORT ?? 8080);
const dataDir = values['data-dir'] ? resolve(values['data-dir']) : undefined;
if (dataDir) mkdirSync(dataDir, { recursive: true });

/** Webhook secrets are sealed with this key: kept beside the data it sealed, so they stay readable after a restart. */
function sealingKeyIn(dir: string): string {
  const file = resolve(dir, 'sealing.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

const dynamodb = await startDynamoDbLocal({ dataDir });
let stopping = false;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  await runtime?.stop().catch(() => undefined);
  await dynamodb.stop();
  process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void shutdown(0));

let runtime: Awaited<ReturnType<typeof startLocalRuntime>> | undefined;
try {
  runtime = await startLocalRuntime({
    dynamodbEndpoint: dynamodb.endpoint,
    tablePrefix: 'vps-local',
    port,
    bootMs: values.fast ? 1_000 : 20_000,
    ...(dataDir ? { env: { SEALING_KEY: sealingKeyIn(dataDir) } } : {}),
    onRequest: ({ method, path, status, ms }) => console.log(`${method} ${path} ${status} ${ms.toFixed(0)} ms`),
  });
} catch (error) {
  console.error(`could not start: ${error instanceof Error ? error.message : String(error)}`);
  await shutdown(1);
}
if (!runtime) throw new Error('unreachable');

const demo = await seedDemoAccount();
const runtimeFile = resolve(repositoryRoot, '.local/runtime.json');
mkdirSync(resolve(repositoryRoot, '.local'), { recursive: true, mode: 0o700 });
writeFileSync(
  runtimeFile,
  JSON.stringify(
    {
      base_url: runtime.baseUrl,
      api_key: demo.apiKey,
      account_id: demo.accountId,
      session: demo.session,
      csrf_token: demo.csrfToken,
      simulator_url: runtime.simulator.url,
      dynamodb_endpoint: dynamodb.endpoint,
      sfn_endpoint: runtime.stepFunctions.endpoint,
      table_prefix: 'vps-local',
      upstream_token: runtime.upstreamToken,
    },
    null,
    2,
  ),
  { mode: 0o600 },
);
chmodSync(runtimeFile, 0o600);

console.log(`
VPS Provisioning Service running locally (ready in ${((performance.now() - started) / 1000).toFixed(1)} s)

  Base URL     ${runtime.baseUrl}
  API key      ${demo.apiKey}
  Session      ${demo.session}
  CSRF token   ${demo.csrfToken}
  Account      ${demo.accountId} ($50.00 deposited)
  Simulator    ${runtime.simulator.url}  (upstream boot ~${values.fast ? '1' : '20'} s)
  DynamoDB     ${dynamodb.endpoint}${dataDir ? ` (data in ${dataDir})` : ' (in memory)'}

Credentials written to .local/runtime.json (mode 0600). Ctrl-C to stop.
`);
