import { randomBytes } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { TableName } from '../../shared/tables';
import { scheduleNames, schedules } from '../schedules';
import { createLocalTables } from './tables';
import { startGateway, type GatewayOptions } from './gateway';
import { startSimulator, type Simulator } from './simulator';
import { startPaymentsSimulator, type PaymentsSimulator, type PaymentsSimulatorOptions } from './payments-simulator';
import { startLocalStepFunctions, type LocalStepFunctions, type LocalStepFunctionsOptions } from './step-functions';
import { localHandlerEnv, localTableNames } from './handler-env';
import { LocalEventBus } from './event-bus';
import { startStreamPoller } from './stream-poller';
import { tables, tableNames as allTables, type TableDefinition } from '../../shared/tables';
import { publishChanges } from '../../shared/domain/event-publishing';
import type { EventSourceTable } from '../../shared/domain/events';
import type { Deps } from '../../shared/domain/deps';
import type { EventTransports } from '../../shared/events/ports';
import { loadConfig } from '../../shared/config';
import { depsOf } from '../../shared/wiring/platform';
import type { EntryHandler } from '../../shared/wiring/entry';
import { sendAuthMail } from '../../shared/domain/console-auth';
import { authMailRequestSchema, type AuthMailRequest } from '../../shared/schemas/auth';
import { deliveryMessageSchema } from '../../shared/events/ports';
import { deliverWebhook, fanOut } from '../../shared/domain/webhook-delivery';
import { LocalDeliveryQueue } from './delivery-queue';
import { temporarySecretsKeyFile } from './secrets-key';
import { paymentWebhookRoute } from '../../shared/contracts/billing';

const PAYMENT_WEBHOOK_PATH = paymentWebhookRoute.path;

export const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface LocalRuntimeOptions {
  readonly dynamodbEndpoint: string;
  /** Physical table names are `<prefix>-<table>`: separate prefixes keep separate data in one DynamoDB Local. */
  readonly tablePrefix: string;
  readonly port?: number;
  /** Upstream boot time (ms). */
  readonly bootMs: number;
  /** Local length of every Wait state (ms). */
  readonly waitMs?: number;
  /** Instead of `waitMs`, each Wait state's own length times this (see LocalStepFunctionsOptions). */
  readonly waitScale?: number;
  /** Local length of every retry pause (ms). */
  readonly retryMs?: number;
  /** Extra environment for the handlers (for example a shorter provisioning budget). */
  readonly env?: Record<string, string>;
  /** How many upstream tokens of the one simulated account the service is given. @default 1 */
  readonly upstreamTokens?: number;
  readonly onRequest?: GatewayOptions['onRequest'];
  readonly routes?: GatewayOptions['routes'];
  readonly aroundInvocation?: GatewayOptions['aroundInvocation'];
  readonly aroundTask?: LocalStepFunctionsOptions['aroundTask'];
  /** Run the scheduled jobs on timers, as EventBridge Scheduler does on AWS (default true). */
  readonly schedules?: boolean;
  /** Where outgoing e-mail is written, one file per message (default `.local/mail`). */
  readonly mailDir?: string;
  /** The local secrets key (see ensureSecretsKeyFile); by default a fresh one, removed when the runtime stops. */
  readonly secretsKeyFile?: string;
  /** How long the simulator takes to carry out an action (ms); by default a quarter of the boot time. */
  readonly actionMs?: number;
  /** How the payments simulator retries its webhooks (tests that make the service unavailable for a while). */
  readonly paymentsDelivery?: Pick<PaymentsSimulatorOptions, 'deliveryAttempts' | 'retryBaseMs'>;
  /**
   * Where the event plumbing keeps its state across restarts: how far the change streams have been read, and the
   * webhook deliveries queued. Unset: kept in memory only, and each start follows the streams from then on.
   */
  readonly dataDir?: string;
}

export interface LocalRuntime {
  readonly baseUrl: string;
  readonly simulator: Simulator;
  /** The local Stripe-compatible payment provider: its checkout pages, and the events it signs and sends. */
  readonly payments: PaymentsSimulator;
  readonly stepFunctions: LocalStepFunctions;
  readonly tableNames: Record<TableName, string>;
  /** The service's dependencies in this runtime (its configuration, clients, engine and transports), for tools and tests. */
  readonly deps: Deps;
  /** The simulator's tokens as the service reads them (comma-separated), for tools that drive the upstream as it does. */
  readonly upstreamToken: string;
  /** The local event bus: every event the change streams yield, as EventBridge receives them on AWS. */
  readonly events: LocalEventBus;
  /** The account console, served by the gateway. */
  readonly consoleUrl: string;
  readonly mailDir: string;
  /** Resolves once every console e-mail asked for so far has been written to `mailDir` (or has failed for good). */
  mailSettled(): Promise<void>;
  readonly secretsKeyFile: string;
  /**
   * The service's process dies and comes back: every running workflow execution is lost at whatever step it was in,
   * the gateway drops its connections, and both start again on the same ports and data. The upstream, DynamoDB, its
   * streams and the event bus are other services and live on.
   */
  crashAndRestart(): Promise<void>;
  stop(): Promise<void>;
}

/** Runs every scheduled job at its rate (and once now where it asks to), as EventBridge Scheduler does on AWS. A failed run is logged, not fatal. */
async function startScheduleTimers(deps: Deps): Promise<NodeJS.Timeout[]> {
  return Promise.all(
    scheduleNames.map(async (name) => {
      const definition = schedules[name];
      const module = (await import(pathToFileURL(resolve(repositoryRoot, definition.entry)).href)) as {
        handler: EntryHandler<() => Promise<unknown>>;
      };
      const run = () =>
        void module.handler
          .forRuntime(deps)()
          .catch((error: unknown) => console.error(`${name} failed:`, error));
      if (definition.runAtLocalStart) run();
      return setInterval(run, definition.everyMinutes * 60_000).unref();
    }),
  );
}

/**
 * The whole service on this machine: the upstream simulator, the local Step Functions endpoint running the ASL
 * files, and the local gateway, with the handlers running over this runtime's own Deps, built from the settings a
 * function gets on AWS (its environment variables), kept in a record of the runtime's own.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  // Shaped like DigitalOcean's personal access tokens, so that whatever redacts a real one is exercised on them.
  const upstreamTokens = Array.from({ length: options.upstreamTokens ?? 1 }, () => `dop_v1_${randomBytes(32).toString('hex')}`);
  const simulator = await startSimulator({ bootMs: options.bootMs, actionMs: options.actionMs, token: upstreamTokens, ssh: {} });
  const payments = await startPaymentsSimulator(options.paymentsDelivery);
  const service = await startLocalService({
    ...options,
    upstream: { url: simulator.url, token: upstreamTokens.join(','), sshPort: simulator.sshPort },
    payments: { url: payments.url, secretKey: payments.secretKey, webhookSecret: payments.webhookSecret },
  });
  payments.setWebhookUrl(`${service.baseUrl}${PAYMENT_WEBHOOK_PATH}`);
  return {
    ...service,
    get stepFunctions() {
      return service.stepFunctions;
    },
    simulator,
    payments,
    async stop() {
      await service.stop();
      await payments.close();
      await simulator.close();
    },
  };
}

export interface LocalServiceOptions extends Omit<LocalRuntimeOptions, 'bootMs' | 'actionMs' | 'upstreamTokens' | 'paymentsDelivery'> {
  /** The upstream, running elsewhere: its URL, the service's tokens for it (comma-separated), its servers' SSH port. */
  readonly upstream: { readonly url: string; readonly token: string; readonly sshPort?: number | undefined };
  /** The local Step Functions endpoint's port (default: a free one). */
  readonly stepFunctionsPort?: number;
  /** The payment provider, running elsewhere: its API base and the service's secrets for it. Unset: no payments. */
  readonly payments?: { readonly url: string; readonly secretKey: string; readonly webhookSecret: string };
}

export type LocalService = Omit<LocalRuntime, 'simulator' | 'payments'>;

/**
 * The service alone (gateway, local Step Functions, the handlers' configuration, the event plumbing), in front of an
 * upstream that runs elsewhere: in this process (startLocalRuntime) or in another one.
 */
export async function startLocalService(options: LocalServiceOptions): Promise<LocalService> {
  const upstreamToken = options.upstream.token;
  const mailDir = options.mailDir ?? resolve(repositoryRoot, '.local/mail');
  const names = localTableNames(options.tablePrefix);
  const temporaryKey = options.secretsKeyFile === undefined ? temporarySecretsKeyFile() : undefined;
  const secretsKeyFile = options.secretsKeyFile ?? temporaryKey?.path ?? '';
  await createLocalTables(options.dynamodbEndpoint, names);
  // Built once the gateway has its port (the console's address is part of the configuration). Whatever comes first
  // (a request, a step, a change on a stream) waits for them: nothing is refused or dropped meanwhile.
  let ready: (deps: Deps) => void = () => undefined;
  const built = new Promise<Deps>((resolve) => (ready = resolve));
  const deps = () => built;
  const startStepFunctions = (port?: number) =>
    startLocalStepFunctions({
      root: repositoryRoot,
      port,
      waitMs: options.waitMs ?? 250,
      waitScale: options.waitScale,
      retryMs: options.retryMs ?? 200,
      aroundTask: options.aroundTask,
      deps,
    });
  let stepFunctions = await startStepFunctions(options.stepFunctionsPort);
  const handlerEnv = {
    ...localHandlerEnv({
      dynamodbEndpoint: options.dynamodbEndpoint,
      sfnEndpoint: stepFunctions.endpoint,
      simulatorUrl: options.upstream.url,
      upstreamToken,
      sshPort: options.upstream.sshPort,
      tablePrefix: options.tablePrefix,
      secretsKeyFile,
    }),
    // Development receivers listen on this machine; the stack never allows them.
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    MAIL_DIR: mailDir,
    MAIL_FROM: 'VPS Service <no-reply@localhost>',
    // Plain http: clients that honour Secure would never send the cookie back over it.
    INSECURE_COOKIES: 'true',
    // The simulator has no rate limit of its own: a budget sized for it (tests of the budget set theirs).
    UPSTREAM_BUDGET_PER_HOUR: '36000000',
    UPSTREAM_BUDGET_BURST: '100000',
    ...(options.payments
      ? {
          PAYMENTS_API_BASE: options.payments.url,
          STRIPE_SECRET_KEY: options.payments.secretKey,
          STRIPE_WEBHOOK_SECRET: options.payments.webhookSecret,
        }
      : {}),
  };
  const events = new LocalEventBus();
  const deliveries = new LocalDeliveryQueue(
    // Read back from disk after a restart: parsed like the SQS messages on AWS.
    async (message) => deliverWebhook(await deps(), deliveryMessageSchema.parse(message)),
    options.dataDir && resolve(options.dataDir, 'webhook-deliveries'),
  );
  const authMail = new LocalDeliveryQueue<AuthMailRequest>(
    async (message) => sendAuthMail(await deps(), authMailRequestSchema.parse(message)),
    options.dataDir && resolve(options.dataDir, 'auth-mail'),
    'console e-mail',
  );
  const transports: EventTransports = { events, deliveries, authMail: { send: (message) => authMail.send(message, 0) } };
  // Events flow from here on, before any handler can change anything.
  events.subscribe(async (event) => void (await fanOut(await deps(), event)));
  const streamTables = allTables.filter((table): table is EventSourceTable => Boolean((tables[table] as TableDefinition).stream));
  const byPhysicalName = new Map(streamTables.map((table) => [names[table], table]));
  const poller = await startStreamPoller({
    endpoint: options.dynamodbEndpoint,
    tables: [...byPhysicalName.keys()],
    onRecords: async (physical, records) => void (await publishChanges(await deps(), byPhysicalName.get(physical)!, records)),
    // The event dead-letter queue on AWS: kept beside the checkpoint, one line per batch given up on.
    onFailure: async (failure) => {
      if (options.dataDir)
        await appendFile(resolve(options.dataDir, 'stream-dead-letters.jsonl'), `${JSON.stringify(failure)}\n`, { mode: 0o600 });
    },
    checkpointFile: options.dataDir && resolve(options.dataDir, 'stream-checkpoint.json'),
  });
  const startServiceGateway = (port: number) =>
    startGateway({
      root: repositoryRoot,
      port,
      onRequest: options.onRequest,
      routes: options.routes,
      aroundInvocation: options.aroundInvocation,
      consoleDir: resolve(repositoryRoot, 'console/dist'),
      deps,
    });
  let gateway = await startServiceGateway(options.port ?? 0);
  const consoleUrl = `${gateway.url}/console/`;
  const runtimeDeps = depsOf(loadConfig({ ...handlerEnv, CONSOLE_URL: consoleUrl, ...options.env }), () => transports);
  ready(runtimeDeps);
  await authMail.resume();
  await deliveries.resume();
  const timers = options.schedules === false ? [] : await startScheduleTimers(runtimeDeps);

  return {
    baseUrl: gateway.url,
    get stepFunctions() {
      return stepFunctions;
    },
    tableNames: names,
    deps: runtimeDeps,
    upstreamToken,
    events,
    consoleUrl,
    mailDir,
    mailSettled: () => authMail.idle(),
    secretsKeyFile,
    async crashAndRestart() {
      await gateway.close();
      await stepFunctions.close();
      // Same ports: the handlers' configuration, read once, still points at them.
      stepFunctions = await startStepFunctions(Number(new URL(stepFunctions.endpoint).port));
      gateway = await startServiceGateway(Number(new URL(gateway.url).port));
    },
    async stop() {
      for (const timer of timers) clearInterval(timer);
      await gateway.close();
      await poller.stop();
      await deliveries.close();
      await authMail.close();
      await stepFunctions.close();
      temporaryKey?.remove();
    },
  };
}
