import { awsDeps } from '../../shared/wiring/aws';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local';
import { localHandlerEnv } from '../../infra/local/handler-env';
import { freePort } from '../../infra/local/ports';
import { ensureSecretsKeyFile } from '../../infra/local/secrets-key';
import { startSimulator } from '../../infra/local/simulator';
import { startPaymentsSimulator } from '../../infra/local/payments-simulator';
import { paymentWebhookRoute } from '../../shared/contracts/billing';
import type { ChaosTarget } from './chaos';
import { CHAOS_RUNTIME } from './runtime-settings';
import type { ServiceSpec } from './service';

/**
 * Everything in its own process, as in production: DynamoDB Local (a JVM, its data on disk under `dataDir`), the
 * upstream simulator (here), and the service (`service.ts`), which a crash kills with SIGKILL and starts again on the
 * same data. This process builds the service's dependencies too: the run's reconciler, meter and money moves are the
 * scheduled jobs and operators of production.
 */
export async function startChaosProcesses(options: {
  dataDir: string;
  verbose: boolean;
}): Promise<ChaosTarget & { stop(): Promise<void> }> {
  mkdirSync(resolve(options.dataDir, 'service'), { recursive: true });
  const dynamodb = await startDynamoDbLocal({ dataDir: options.dataDir });
  const token = `dop_v1_${randomBytes(32).toString('hex')}`;
  const simulator = await startSimulator({ bootMs: CHAOS_RUNTIME.bootMs, actionMs: CHAOS_RUNTIME.actionMs, token, ssh: {} });
  // The provider retries a webhook for long enough to outlast a crash of the service, as Stripe's do (for days).
  const payments = await startPaymentsSimulator({ deliveryAttempts: 8, retryBaseMs: 250 });
  const spec: ServiceSpec = {
    dynamodbEndpoint: dynamodb.endpoint,
    tablePrefix: `chaos${randomBytes(4).toString('hex')}`,
    upstream: { url: simulator.url, token, sshPort: simulator.sshPort },
    payments: { url: payments.url, secretKey: payments.secretKey, webhookSecret: payments.webhookSecret },
    dataDir: resolve(options.dataDir, 'service'),
    secretsKeyFile: ensureSecretsKeyFile(resolve(options.dataDir, 'secrets.key')),
    port: await freePort(),
    stepFunctionsPort: await freePort(),
    controlPort: await freePort(),
  };
  // The service's dependencies as its process builds them, for this process's scheduled jobs, operators and checks.
  const deps = awsDeps({
    ...localHandlerEnv({
      dynamodbEndpoint: spec.dynamodbEndpoint,
      sfnEndpoint: `http://127.0.0.1:${spec.stepFunctionsPort}`,
      simulatorUrl: simulator.url,
      upstreamToken: token,
      sshPort: simulator.sshPort,
      tablePrefix: spec.tablePrefix,
      secretsKeyFile: spec.secretsKeyFile,
    }),
    PAYMENTS_API_BASE: payments.url,
    STRIPE_SECRET_KEY: payments.secretKey,
    STRIPE_WEBHOOK_SECRET: payments.webhookSecret,
    // The account e-mails this process's operators cause (auto-recharge changes) go where the service's go.
    MAIL_DIR: resolve(options.dataDir, 'mail'),
    ...CHAOS_RUNTIME.env,
  });
  payments.setWebhookUrl(`http://127.0.0.1:${spec.port}${paymentWebhookRoute.path}`);

  let service: ChildProcess | undefined;
  const startService = () =>
    new Promise<void>((ready, failed) => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', resolve(import.meta.dirname, 'service.ts'), ...(options.verbose ? ['--verbose'] : [])],
        { env: { ...process.env, CHAOS_SERVICE: JSON.stringify(spec) }, stdio: ['ignore', 'pipe', 'inherit'] },
      );
      service = child;
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        // The handlers log to stdout: with --verbose they join this process's log.
        if (options.verbose) process.stderr.write(chunk);
        output += chunk.toString();
        if (output.includes('ready\n')) ready();
      });
      child.once('exit', (code, signal) => failed(new Error(`the service exited (${code ?? signal}) before it was ready`)));
    });
  const killService = async () => {
    const child = service;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGKILL');
    await exited;
  };
  await startService();

  let stalled: NodeJS.Timeout | undefined;
  let stalledPid: number | undefined;
  const resumeDynamoDb = () => {
    clearTimeout(stalled);
    if (stalledPid !== undefined) process.kill(stalledPid, 'SIGCONT');
    stalled = stalledPid = undefined;
  };

  return {
    baseUrl: `http://127.0.0.1:${spec.port}`,
    simulator,
    payments,
    deps,
    async idle() {
      for (;;) {
        const answer = await fetch(`http://127.0.0.1:${spec.controlPort}/idle`).catch(() => undefined);
        if (answer?.status === 204) return;
        await new Promise((wait) => setTimeout(wait, 200));
      }
    },
    async workflowFault(operation, fault) {
      // A service process that is down or restarting starts with no fault: nothing to set.
      await fetch(`http://127.0.0.1:${spec.controlPort}/step-functions-fault`, {
        method: 'POST',
        body: JSON.stringify({ operation, fault: fault ?? null }),
      }).catch(() => undefined);
    },
    async crash() {
      await killService();
      await startService();
    },
    dynamodb: {
      stall(ms) {
        if (stalledPid !== undefined || dynamodb.pid === undefined) return;
        stalledPid = dynamodb.pid;
        process.kill(stalledPid, 'SIGSTOP');
        stalled = setTimeout(resumeDynamoDb, ms);
      },
      async restart() {
        resumeDynamoDb();
        await dynamodb.restart();
      },
    },
    async stop() {
      resumeDynamoDb();
      await killService();
      await simulator.close();
      await payments.close();
      await dynamodb.stop();
    },
  };
}
