import './env-defaults';
import { chmodSync, mkdirSync, watch, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startDynamoDbLocal } from './dynamodb-local';
import { repositoryRoot, startLocalRuntime } from './runtime';
import { seedDemoAccount } from './seed';
import { ensureSecretsKeyFile } from './secrets-key';
import { MCP_PATH } from '../../shared/contracts/mcp';

/**
 * `npm start`: the whole service on this machine, no AWS account, no network.
 *   --data-dir DIR   keep DynamoDB data, the change streams' position and queued webhook deliveries across restarts
 *                    (default: in memory)
 *   --fast           upstream servers boot in about 1 s instead of about 20 s
 *   --port N         gateway port (default PORT or 8080)
 * The credentials go to .local/runtime.json, or to the file VPS_RUNTIME_FILE names.
 */
const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    fast: { type: 'boolean', default: false },
    port: { type: 'string' },
  },
});

/** Prints the path of each message the service writes to the local mailbox, as it arrives. */
function announceMail(mailDir: string) {
  mkdirSync(mailDir, { recursive: true, mode: 0o700 });
  const seen = new Set<string>();
  watch(mailDir, (_event, name) => {
    if (!name?.endsWith('.eml') || seen.has(name)) return;
    seen.add(name);
    console.log(`mail: ${relative(process.cwd(), resolve(mailDir, name))}`);
  }).unref();
}

const started = performance.now();
const port = Number(values.port ?? process.env.PORT ?? 8080);
const dataDir = values['data-dir'] ? resolve(values['data-dir']) : undefined;
if (dataDir) mkdirSync(dataDir, { recursive: true });

// Kept beside the data it seals, so that a kept data directory stays readable after a restart.
mkdirSync(resolve(repositoryRoot, '.local'), { recursive: true, mode: 0o700 });
const secretsKeyFile = ensureSecretsKeyFile(resolve(dataDir ?? resolve(repositoryRoot, '.local'), 'secrets.key'));
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
    secretsKeyFile,
    dataDir,
    onRequest: ({ method, path, status, ms }) => console.log(`${method} ${path} ${status} ${ms.toFixed(0)} ms`),
  });
} catch (error) {
  console.error(`could not start: ${error instanceof Error ? error.message : String(error)}`);
  await shutdown(1);
}
if (!runtime) throw new Error('unreachable');

const demo = await seedDemoAccount(runtime.deps);
announceMail(runtime.mailDir);
// VPS_RUNTIME_FILE puts it elsewhere (the CLI reads the same variable): for a second service beside a developer's.
const runtimeFile = resolve(process.env.VPS_RUNTIME_FILE || resolve(repositoryRoot, '.local/runtime.json'));
writeFileSync(
  runtimeFile,
  JSON.stringify(
    {
      base_url: runtime.baseUrl,
      mcp_url: `${runtime.baseUrl}${MCP_PATH}`,
      api_key: demo.apiKey,
      account_id: demo.accountId,
      session: demo.session,
      csrf_token: demo.csrfToken,
      simulator_url: runtime.simulator.url,
      payments_url: runtime.payments.url,
      stripe_webhook_secret: runtime.payments.webhookSecret,
      dynamodb_endpoint: dynamodb.endpoint,
      sfn_endpoint: runtime.stepFunctions.endpoint,
      table_prefix: 'vps-local',
      upstream_token: runtime.upstreamToken,
      secrets_key_file: secretsKeyFile,
    },
    null,
    2,
  ),
  { mode: 0o600 },
);
chmodSync(runtimeFile, 0o600);

console.log(`
VPS Provisioning Service running locally (ready in ${((performance.now() - started) / 1000).toFixed(1)} s)

  Console      ${runtime.consoleUrl}  (e-mail goes to ${relative(process.cwd(), runtime.mailDir)}/)
  Base URL     ${runtime.baseUrl}
  MCP URL      ${runtime.baseUrl}${MCP_PATH}  (Bearer: the API key; npx vps mcp for stdio clients)
  API key      ${demo.apiKey}
  Session      ${demo.session}
  CSRF token   ${demo.csrfToken}
  Account      ${demo.accountId} ($50.00 deposited)
  Simulator    ${runtime.simulator.url}  (upstream boot ~${values.fast ? '1' : '20'} s)
  Payments     ${runtime.payments.url}  (Stripe-compatible: checkout pages, signed webhooks)
  DynamoDB     ${dynamodb.endpoint}${dataDir ? ` (data in ${dataDir})` : ' (in memory)'}

Credentials written to ${relative(process.cwd(), runtimeFile)} (mode 0600). Ctrl-C to stop.
`);
