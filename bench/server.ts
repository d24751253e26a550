import '../infra/local/env-defaults';
import { randomBytes } from 'node:crypto';
import { routes } from '../shared/routes';
import { localHandlerEnv } from '../infra/local/handler-env';
import { startLocalRuntime } from '../infra/local/runtime';
import { callDepths, installDynamoCallRecorder, recordDynamoCalls, sequentialRounds, type DynamoCall } from './dynamo-calls';
import { issueApiKey, openAccount, openSession, usdToMicros } from '../shared/domain/accounts';
import { deposit } from '../shared/domain/billing';
import {
  NOOP_ROUTE,
  SDK_FLOOR_ROUTE,
  type AcceptedEntry,
  type CallShape,
  type ExecutionSummary,
  type Request,
  type RequestCalls,
  type ServerSettings,
  type TaskStats,
} from './protocol';

/**
 * The service under measurement, in its own process so that the load generator does not share its event loop:
 * the local runtime plus a no-op route and the raw-SDK request floor, driven over IPC by bench/run.ts.
 */
const settings = JSON.parse(process.argv[2] ?? '{}') as ServerSettings;
const tablePrefix = `bench${randomBytes(4).toString('hex')}`;
const recordedRequests: RequestCalls[] = [];
const taskStats = new Map<string, { invocations: number; totalMs: number; shapes: CallShape[] }>();
let recording = false;
/** Accepted general-window entries, while the sliding-window proof records them. */
let acceptedEntries: AcceptedEntry[] | undefined;

const shapeOf = (call: DynamoCall): CallShape => ({
  operation: call.operation,
  table: call.table?.slice(tablePrefix.length + 1) ?? '-',
  items: call.items,
});

/** What a request's calls were: how many, in how many sequential rounds (see callDepths), and its budget's writes. */
function summarize(route: string, calls: DynamoCall[]): RequestCalls {
  const ordered = [...calls].sort((a, b) => a.startedAt - b.startedAt);
  const depth = callDepths(ordered);
  const rounds = Math.max(0, ...depth.values());
  const accountRead = ordered.find((call) => call.operation === 'GetItemCommand' && shapeOf(call).table === 'accounts');
  const authRounds = accountRead ? depth.get(accountRead)! : 0;
  // The key as the document client passed it down: a plain value, or an attribute value once marshalled.
  const keyName = (call: DynamoCall) => {
    const name = (call.input.Key as { name?: unknown } | undefined)?.name;
    return String(name && typeof name === 'object' && 'S' in name ? name.S : name);
  };
  const budget = calls.filter((call) => call.operation === 'UpdateItemCommand' && keyName(call).startsWith('upstream-budget#'));
  return {
    route,
    calls: calls.length,
    rounds,
    authRounds,
    shapes: ordered.map(shapeOf),
    budgetWrites: budget.length,
    budgetRounds: sequentialRounds(budget),
    budgetTaken: budget.some((call) => !call.failed),
  };
}

/**
 * The general-window entries a request's calls wrote: an UpdateItem on a `rate#general#…` counter that succeeded
 * (its condition held) appended `:entry`, microseconds on the server's clock.
 */
function acceptedIn(calls: DynamoCall[]): AcceptedEntry[] {
  // The input as the document client passed it down: plain values, or attribute values once marshalled.
  const plain = (value: unknown): unknown =>
    value && typeof value === 'object' && 'S' in value
      ? value.S
      : value && typeof value === 'object' && 'N' in value
        ? Number(value.N)
        : value;
  return calls.flatMap((call) => {
    const input = call.input as { Key?: { name?: unknown }; ExpressionAttributeValues?: Record<string, unknown> };
    const counter = plain(input.Key?.name);
    const list = input.ExpressionAttributeValues?.[':entry'];
    const first = Array.isArray(list) ? list[0] : (list as { L?: unknown[] } | undefined)?.L?.[0];
    const entry = plain(first);
    if (call.operation !== 'UpdateItemCommand' || call.failed || typeof counter !== 'string' || !counter.startsWith('rate#general#'))
      return [];
    return typeof entry === 'number' ? [{ counter, atMs: Math.floor(entry / 1000) }] : [];
  });
}

async function windowsRecorded<T>(invoke: () => Promise<T>): Promise<T> {
  const into = acceptedEntries;
  if (!into) return invoke();
  const calls: DynamoCall[] = [];
  try {
    return await recordDynamoCalls(calls, invoke);
  } finally {
    into.push(...acceptedIn(calls));
  }
}

async function recorded<T>(invoke: () => Promise<T>, done: (calls: DynamoCall[], ms: number) => void): Promise<T> {
  if (!recording) return invoke();
  const calls: DynamoCall[] = [];
  const started = performance.now();
  try {
    return await recordDynamoCalls(calls, invoke);
  } finally {
    done(calls, performance.now() - started);
  }
}

const runtime = await startLocalRuntime({
  dynamodbEndpoint: settings.dynamodbEndpoint,
  tablePrefix,
  bootMs: settings.bootMs,
  waitMs: settings.waitMs,
  retryMs: settings.retryMs,
  schedules: false,
  // Load tests create many instances; the default pools are sized for a small deployment.
  env: { DEFAULT_TIER_CAPACITY: '100000', DEFAULT_IPV4_POOL_SIZE: '100000' },
  routes: [
    ...routes,
    { ...NOOP_ROUTE, method: 'GET', auth: 'none', access: {} },
    { ...SDK_FLOOR_ROUTE, method: 'GET', auth: 'none', access: {} },
  ],
  aroundInvocation: (route, invoke) =>
    recording ? recorded(invoke, (calls) => recordedRequests.push(summarize(route.name, calls))) : windowsRecorded(invoke),
  aroundTask: (workflow, _state, invoke) =>
    recorded(invoke, (calls, ms) => {
      const stats = taskStats.get(workflow) ?? { invocations: 0, totalMs: 0, shapes: [] };
      stats.invocations += 1;
      stats.totalMs += ms;
      stats.shapes.push(...calls.map(shapeOf));
      taskStats.set(workflow, stats);
    }),
});
installDynamoCallRecorder(runtime.deps);
const { deps } = runtime;

function executions(): ExecutionSummary[] {
  return [...runtime.stepFunctions.executions.values()].map((execution) => ({
    name: execution.name,
    workflow: execution.stateMachineArn.split(':').pop() ?? '',
    status: execution.status,
    transitions: execution.events.filter((e) => e.type === 'StateEntered' || e.type === 'StateRetried').length,
    taskInvocations: execution.events.filter((e) => (e.type === 'StateEntered' || e.type === 'StateRetried') && e.state?.type === 'Task')
      .length,
    durationMs: (execution.stopDate ?? Date.now()) - execution.startDate,
  }));
}

async function handle(request: Request): Promise<unknown> {
  switch (request.kind) {
    case 'accounts':
      return Promise.all(
        Array.from({ length: request.count }, async () => {
          const account = await openAccount(deps, {
            email: `${randomBytes(4).toString('hex')}@example.com`,
            confirmed: true,
            suspended: false,
          });
          await deposit(deps, account.account_id, usdToMicros(request.depositUsd));
          const { fullKey } = await issueApiKey(deps, account.account_id, 'Bench');
          return { accountId: account.account_id, apiKey: fullKey };
        }),
      );
    case 'session':
      return openSession(deps, request.accountId);
    case 'recordCalls':
      recording = request.on;
      return null;
    case 'takeCalls':
      return recordedRequests.splice(0);
    case 'takeTaskStats': {
      const stats: Record<string, TaskStats> = Object.fromEntries(taskStats);
      taskStats.clear();
      return stats;
    }
    case 'executions':
      return executions();
    case 'idle':
      return runtime.stepFunctions.idle();
    case 'recordWindows':
      acceptedEntries = request.on ? [] : undefined;
      return null;
    case 'windowEntries':
      return acceptedEntries ?? [];
  }
}

process.on('message', (request: Request) => {
  handle(request).then(
    (result) => process.send?.({ id: request.id, result }),
    (error: unknown) => process.send?.({ id: request.id, error: String(error) }),
  );
});
process.on('disconnect', () => void runtime.stop().then(() => process.exit(0)));
const handlerEnv = {
  ...localHandlerEnv({
    dynamodbEndpoint: settings.dynamodbEndpoint,
    sfnEndpoint: runtime.stepFunctions.endpoint,
    simulatorUrl: runtime.simulator.url,
    upstreamToken: runtime.upstreamToken,
    tablePrefix,
    secretsKeyFile: runtime.secretsKeyFile,
    // A server created by a cold-started CreateInstance is probed where the simulator's SSH answers, not on port 22.
    sshPort: runtime.simulator.sshPort,
  }),
  DEFAULT_TIER_CAPACITY: '100000',
  DEFAULT_IPV4_POOL_SIZE: '100000',
};
// The floors are plain functions that read their environment as a Lambda function does; this process is their
// container. The service's own handlers run over the runtime's Deps and never read it.
Object.assign(process.env, handlerEnv);
process.send?.({ ready: { baseUrl: runtime.baseUrl, handlerEnv } });
