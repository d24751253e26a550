import '../infra/local/env-defaults';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { routes } from '../shared/routes';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local';
import { repositoryRoot } from '../infra/local/runtime';
import { rateLimits } from '../shared/model/rate-limits';
import { startBenchServer, type BenchServer } from './client';
import { bundle, measureColdStart, measureColdStartAgainst, type ColdStart, type ColdStartTarget } from './cold-start';
import { costOf } from './cost';
import { apiEvent } from './events';
import { floorAnsweredAsExpected, runLoad, runSideBySide, type LoadResult, type Scenario } from './load';
import { busiestWindow } from './windows';
import {
  NOOP_ROUTE,
  SDK_FLOOR_ROUTE,
  type AcceptedEntry,
  type BenchAccount,
  type ExecutionSummary,
  type RequestCalls,
  type TaskStats,
} from './protocol';
import {
  SAME_CALLS_FLOOR,
  SOURCE_MAPS,
  STACK_FLOOR,
  STACK_FLOOR_IMPORT_ONLY,
  writeReport,
  type BenchResults,
  type BudgetConcurrency,
  type RequestFloor,
} from './report';
import { deployedFunctions } from '../infra/deployed-functions';
import { currentScaleSection } from './scale-report';

/**
 * `npm run bench`: measures the service on this machine and writes bench/results.md and bench/results.json.
 * Every figure is a count or a ratio taken within this one run, because absolute times on a shared machine drift.
 */
const LOAD_REQUESTS = 400;
const LOAD_CONNECTIONS = 8;
/** Each account takes at most this many of a scenario's requests, safely under the 60-a-minute limit. */
const REQUESTS_PER_ACCOUNT = 50;
/** GetInstance requests (and as many of the floor's) whose DynamoDB calls are recorded after the request floor's run. */
const RECORDED_FLOOR_REQUESTS = 100;
/** Cold starts of each function (and as many of the floor's next to them). */
const COLD_START_SAMPLES = 11;
/** The read scenarios again at these connection counts (p99 and errors under wider load). */
const WIDE_LOAD_CONNECTIONS = [10, 50] as const;
/** The upstream budget's concurrency test: GetInstance requests, and how many at once. */
const BUDGET_REQUESTS = 640;
const BUDGET_CONNECTIONS = 32;

/** The code whose figures a report holds: a report is stale once any of it changed since its commit. */
const MEASURED_PATHS = ['shared', 'functions', 'infra'];
const resultsFile = resolve(repositoryRoot, 'bench/results.json');

const started = Date.now();
const log = (message: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0)}s] ${message}\n`);

async function accounts(server: BenchServer, count: number, depositUsd = '50'): Promise<BenchAccount[]> {
  return server.ask<BenchAccount[]>({ kind: 'accounts', count, depositUsd });
}

async function until<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 60_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Creates an instance on each account and waits until all are active; optionally powers them off. */
async function instancesFor(server: BenchServer, owners: BenchAccount[], stopped = false): Promise<number[]> {
  const ids = await Promise.all(
    owners.map(async ({ apiKey }) => {
      const created = await server.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'bench', flavor: 's-1vcpu-2gb' } });
      if (created.status !== 202) throw new Error(`create answered ${created.status}`);
      return created.body.instance_id as number;
    }),
  );
  // Waiting for the provisions to finish first, rather than polling, keeps the owners' rate windows for the load.
  await server.ask({ kind: 'idle' });
  await Promise.all(
    ids.map((id, i) =>
      until(
        async () => {
          const detail = await server.call('GET', `/api/v1/instances/${id}`, { apiKey: owners[i]!.apiKey });
          return detail.body.status === 'active' ? true : undefined;
        },
        `instance ${id} to be active`,
        60_000,
        2_000,
      ),
    ),
  );
  if (stopped) {
    await Promise.all(
      ids.map((id, i) =>
        server.call('POST', `/api/v1/instances/${id}/actions`, { apiKey: owners[i]!.apiKey, body: { type: 'power_off' } }),
      ),
    );
    await server.ask({ kind: 'idle' });
  }
  return ids;
}

const bearer = (account: BenchAccount) => ({ authorization: `Bearer ${account.apiKey}` });
const rotate = <T>(items: T[], i: number): T => items[i % items.length]!;

const NOOP_SCENARIO = 'floor (no-op handler)';

/** 1. Request overhead: each endpoint next to the floor (the same gateway and a handler that does no work). */
async function requestOverhead(server: BenchServer): Promise<LoadResult[]> {
  const pool = () => accounts(server, Math.ceil(LOAD_REQUESTS / REQUESTS_PER_ACCOUNT));
  const [detailOwners, listOwners, actionOwners] = await Promise.all([pool(), pool(), pool()]);
  const creators = await accounts(server, Math.ceil(LOAD_REQUESTS / 4 / rateLimits.deploy.limit));
  const [detailIds, actionIds] = await Promise.all([instancesFor(server, detailOwners), instancesFor(server, actionOwners, true)]);
  log('fixtures ready; running load');

  const scenarios: [Scenario, number][] = [
    [{ name: NOOP_SCENARIO, method: 'GET', expectedStatus: 200, request: () => ({ path: NOOP_ROUTE.path }) }, LOAD_REQUESTS],
    [
      {
        name: 'GET /api/v1/instances/{id}',
        method: 'GET',
        expectedStatus: 200,
        request: (i) => ({ path: `/api/v1/instances/${rotate(detailIds, i)}`, headers: bearer(rotate(detailOwners, i)) }),
      },
      LOAD_REQUESTS,
    ],
    [
      {
        name: 'GET /api/v1/instances',
        method: 'GET',
        expectedStatus: 200,
        request: (i) => ({ path: '/api/v1/instances', headers: bearer(rotate(listOwners, i)) }),
      },
      LOAD_REQUESTS,
    ],
    [
      {
        name: 'POST /api/v1/instances',
        method: 'POST',
        expectedStatus: 202,
        request: (i) => ({
          path: '/api/v1/instances',
          headers: bearer(rotate(creators, i)),
          body: { project_name: `load-${i}`, flavor: 's-1vcpu-2gb' },
        }),
      },
      creators.length * rateLimits.deploy.limit,
    ],
    [
      {
        name: 'POST /api/v1/instances/{id}/actions (power_off, already stopped)',
        method: 'POST',
        expectedStatus: 200,
        request: (i) => ({
          path: `/api/v1/instances/${rotate(actionIds, i)}/actions`,
          headers: bearer(rotate(actionOwners, i)),
          body: { type: 'power_off' },
        }),
      },
      LOAD_REQUESTS,
    ],
  ];
  const results: LoadResult[] = [];
  for (const [scenario, requests] of scenarios) {
    const result = await runLoad(server, scenario, requests, LOAD_CONNECTIONS);
    results.push(scenario.name === NOOP_SCENARIO ? floorAnsweredAsExpected(result) : result);
    log(`load: ${scenario.name}`);
  }
  // The reads again at 10 and 50 connections, each on accounts of its own (their rate windows are fresh).
  for (const connections of WIDE_LOAD_CONNECTIONS) {
    const [owners, listers] = await Promise.all([pool(), pool()]);
    const ids = await instancesFor(server, owners);
    const wide: Scenario[] = [
      {
        name: `GET /api/v1/instances/{id}, ${connections} connections`,
        method: 'GET',
        expectedStatus: 200,
        request: (i) => ({ path: `/api/v1/instances/${rotate(ids, i)}`, headers: bearer(rotate(owners, i)) }),
      },
      {
        name: `GET /api/v1/instances, ${connections} connections`,
        method: 'GET',
        expectedStatus: 200,
        request: (i) => ({ path: '/api/v1/instances', headers: bearer(rotate(listers, i)) }),
      },
    ];
    for (const scenario of wide) {
      results.push(await runLoad(server, scenario, LOAD_REQUESTS, connections));
      log(`load: ${scenario.name}`);
    }
  }
  return results;
}

/**
 * 1c. The upstream request budget under concurrency: GetInstance at 32 connections, every DynamoDB call recorded. Each
 * request of a settled server takes one token; a take that needed more than one round of conditional writes collided.
 */
async function budgetUnderConcurrency(server: BenchServer): Promise<BudgetConcurrency> {
  const owners = await accounts(server, Math.ceil(BUDGET_REQUESTS / REQUESTS_PER_ACCOUNT));
  const ids: number[] = [];
  for (let i = 0; i < owners.length; i += 8) ids.push(...(await instancesFor(server, owners.slice(i, i + 8))));
  await server.ask({ kind: 'recordCalls', on: true });
  const load = await runLoad(
    server,
    {
      name: `GET /api/v1/instances/{id}, ${BUDGET_CONNECTIONS} connections`,
      method: 'GET',
      expectedStatus: 200,
      request: (i) => ({ path: `/api/v1/instances/${rotate(ids, i)}`, headers: bearer(rotate(owners, i)) }),
    },
    BUDGET_REQUESTS,
    BUDGET_CONNECTIONS,
  );
  await server.ask({ kind: 'recordCalls', on: false });
  const recorded = (await server.ask<RequestCalls[]>({ kind: 'takeCalls' })).filter((c) => c.route === 'GetInstance');
  const takes = recorded.filter((c) => c.budgetWrites > 0);
  log('upstream budget under concurrency');
  return {
    connections: BUDGET_CONNECTIONS,
    load,
    requests: recorded.length,
    takes: takes.length,
    writes: takes.reduce((sum, c) => sum + c.budgetWrites, 0),
    collided: takes.filter((c) => c.budgetRounds > 1).length,
    granted: takes.filter((c) => c.budgetTaken).length,
  };
}

/**
 * 1b. The request floor: GetInstance next to a handler that makes its DynamoDB calls and its upstream read with the
 * AWS SDK alone, served by the same gateway, side by side under one load (fresh accounts, so that both stay within
 * the rate limit their calls count against). Then a shorter side-by-side pass with GetInstance's DynamoDB calls
 * recorded, to show what it did under that load.
 */
async function requestFloor(server: BenchServer): Promise<RequestFloor> {
  const owners = await accounts(server, Math.ceil((2 * (LOAD_REQUESTS + RECORDED_FLOOR_REQUESTS)) / REQUESTS_PER_ACCOUNT));
  // In batches of the other scenarios' size, so that provisioning keeps the pace it has there.
  const ids: number[] = [];
  for (let i = 0; i < owners.length; i += 8) ids.push(...(await instancesFor(server, owners.slice(i, i + 8))));
  const path = (id: number, floor: boolean) =>
    floor ? SDK_FLOOR_ROUTE.path.replace('{instance_id}', String(id)) : `/api/v1/instances/${id}`;
  const scenario = (name: string, floor: boolean, offset: number): Scenario => ({
    name,
    method: 'GET',
    expectedStatus: 200,
    request: (i) => ({ path: path(rotate(ids, i + offset), floor), headers: bearer(rotate(owners, i + offset)) }),
  });
  const pair = (offset: number) => [
    scenario(`raw-SDK floor: GetInstance's calls`, true, offset),
    scenario('GET /api/v1/instances/{id} (GetInstance)', false, offset),
  ];
  const [floor, ours] = await runSideBySide(server, pair(0), LOAD_REQUESTS, LOAD_CONNECTIONS);
  log('request floor: side by side');
  await server.ask({ kind: 'recordCalls', on: true });
  await runSideBySide(server, pair(LOAD_REQUESTS), RECORDED_FLOOR_REQUESTS, LOAD_CONNECTIONS);
  await server.ask({ kind: 'recordCalls', on: false });
  const recorded = (await server.ask<RequestCalls[]>({ kind: 'takeCalls' })).filter((c) => c.route === 'GetInstance');
  const mean = (pick: (c: RequestCalls) => number) => recorded.reduce((sum, c) => sum + pick(c), 0) / Math.max(1, recorded.length);
  if (!floor || !ours) throw new Error('the side-by-side run returned no results');
  return {
    floor: floorAnsweredAsExpected(floor),
    ours,
    oursUnderLoad: {
      requests: recorded.length,
      meanCalls: mean((c) => c.calls),
      meanRounds: mean((c) => c.rounds),
      collided: recorded.filter((c) => c.budgetRounds > 1).length,
    },
  };
}

/** 2. DynamoDB round trips per request, recorded on the real client, one request at a time. */
async function roundTrips(server: BenchServer): Promise<RequestCalls[]> {
  const [owner] = await accounts(server, 1);
  if (!owner) throw new Error('no account');
  const [instanceId] = await instancesFor(server, [owner]);
  const session = await server.ask<{ session: string; csrfToken: string }>({ kind: 'session', accountId: owner.accountId });
  const page = { cookie: `session=${session.session}`, 'x-csrftoken': session.csrfToken };
  await server.ask({ kind: 'recordCalls', on: true });
  const apiKey = owner.apiKey;
  await server.call('GET', '/api/v1/instances', { apiKey });
  await server.call('GET', `/api/v1/instances/${instanceId}`, { apiKey });
  const created = await server.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'rt', flavor: 's-1vcpu-2gb' } });
  const reboot = await server.call('POST', `/api/v1/instances/${instanceId}/actions`, { apiKey, body: { type: 'reboot' } });
  await server.call('GET', `/api/v1/jobs/${reboot.body.job_id}`, { apiKey });
  await server.ask({ kind: 'idle' });
  await server.call('DELETE', `/api/v1/instances/${created.body.instance_id}`, { apiKey });
  await server.call('GET', '/api/v1/keys', { headers: page });
  const key = await server.call('POST', '/api/v1/keys', { headers: page, body: { name: 'rt' } });
  await server.call('DELETE', `/api/v1/keys/${key.body.id}`, { headers: page });
  await server.ask({ kind: 'recordCalls', on: false });
  await server.ask({ kind: 'idle' });
  await server.ask({ kind: 'takeTaskStats' });
  return server.ask<RequestCalls[]>({ kind: 'takeCalls' });
}

/** 3. Cold start: each API function bundled as deployed, started in a fresh Node 24 process, next to hello-world. */
async function coldStarts(server: BenchServer): Promise<ColdStart[]> {
  const [owner] = (await accounts(server, 1)) as [BenchAccount];
  // Each cold create takes from its account's deploy quota: enough accounts that no sample is refused.
  const creators = await accounts(server, Math.ceil(COLD_START_SAMPLES / rateLimits.deploy.limit));
  const [instanceId] = await instancesFor(server, [owner], true);
  const session = await server.ask<{ session: string }>({ kind: 'session', accountId: owner.accountId });
  const events: Partial<Record<string, (sample: number) => unknown>> = {
    ListInstances: () => apiEvent({ method: 'GET', routePath: '/api/v1/instances', path: '/api/v1/instances', headers: bearer(owner) }),
    GetInstance: () =>
      apiEvent({
        method: 'GET',
        routePath: '/api/v1/instances/{instance_id}',
        path: `/api/v1/instances/${instanceId}`,
        pathParameters: { instance_id: String(instanceId) },
        headers: bearer(owner),
      }),
    CreateInstance: (sample) =>
      apiEvent({
        method: 'POST',
        routePath: '/api/v1/instances',
        path: '/api/v1/instances',
        headers: bearer(rotate(creators, sample)),
        body: { project_name: `cold-${sample}`, flavor: 's-1vcpu-2gb' },
      }),
    InstanceAction: () =>
      apiEvent({
        method: 'POST',
        routePath: '/api/v1/instances/{instance_id}/actions',
        path: `/api/v1/instances/${instanceId}/actions`,
        pathParameters: { instance_id: String(instanceId) },
        headers: bearer(owner),
        body: { type: 'power_off' },
      }),
    ListKeys: () => apiEvent({ method: 'GET', routePath: '/api/v1/keys', path: '/api/v1/keys', cookies: [`session=${session.session}`] }),
    OpenApiDocument: () => apiEvent({ method: 'GET', routePath: '/api/v1/openapi.json', path: '/api/v1/openapi.json' }),
    NotFound: () => apiEvent({ method: 'GET', routePath: '$default', path: '/nowhere' }),
  };
  const hello: ColdStartTarget = { name: 'hello-world', ...(await bundle('hello-world', 'bench/hello-handler.ts')), event: () => ({}) };
  const floorBundle = await bundle('sdk-floor', 'bench/sdk-floor-handler.ts');
  const floor: ColdStartTarget = { name: 'sdk-floor', ...floorBundle, event: () => ({}) };
  const importOnly = (target: ColdStartTarget): ColdStartTarget => ({ ...target, event: () => undefined });
  const stackFloor: ColdStartTarget = {
    name: STACK_FLOOR,
    ...(await bundle(STACK_FLOOR, 'bench/stack-floor-handler.ts')),
    event: () => ({}),
  };
  const results = [
    await measureColdStart(hello, {}, COLD_START_SAMPLES),
    await measureColdStart(floor, server.handlerEnv, COLD_START_SAMPLES),
    // The libraries' own price: the stack floor against the SDK floor, serving its GetItem and importing only.
    await measureColdStartAgainst(stackFloor, floor, server.handlerEnv, COLD_START_SAMPLES),
    await measureColdStartAgainst(
      { ...importOnly(stackFloor), name: STACK_FLOOR_IMPORT_ONLY },
      importOnly(floor),
      server.handlerEnv,
      COLD_START_SAMPLES,
    ),
  ];
  const deployed = deployedFunctions();
  const accessOf = (name: string) => deployed.find((fn) => fn.name === name)?.access ?? {};
  for (const route of routes) {
    const event = events[route.name];
    const target = {
      name: route.name,
      ...(await bundle(route.name, route.entry, accessOf(route.name))),
      event: event ?? (() => undefined),
    };
    // A function measured without a request is measured against the floors' imports alone.
    const [against, stack] = event ? [floor, stackFloor] : [importOnly(floor), importOnly(stackFloor)];
    results.push(await measureColdStartAgainst(target, against, server.handlerEnv, COLD_START_SAMPLES, stack));
    log(`cold start: ${route.name}`);
  }
  // GetInstance once more, next to a floor that makes its calls (the request floor of section 1, cold).
  const getInstance = routes.find((route) => route.name === 'GetInstance');
  if (getInstance && events.GetInstance) {
    const sameCalls: ColdStartTarget = { name: SAME_CALLS_FLOOR, ...floorBundle, event: events.GetInstance };
    const target = {
      name: 'GetInstance',
      ...(await bundle('GetInstance', getInstance.entry, accessOf('GetInstance'))),
      event: events.GetInstance,
    };
    results.push(await measureColdStartAgainst(target, sameCalls, server.handlerEnv, COLD_START_SAMPLES));
    // And with source maps loaded, as `--enable-source-maps` would, against itself without: their cost at a cold start.
    const withMaps = { ...target, name: SOURCE_MAPS, env: { NODE_OPTIONS: '--enable-source-maps' } };
    results.push(await measureColdStartAgainst(withMaps, target, server.handlerEnv, COLD_START_SAMPLES));
  }
  return results;
}

export interface Orchestration {
  readonly provisionToActiveMs: number[];
  readonly executions: Record<string, { transitions: number; taskInvocations: number; durationMs: number }>;
  readonly taskStats: Record<string, TaskStats>;
  readonly createCalls: RequestCalls[];
}

/** 4. Orchestration overhead with instant upstream boots and no waits, and the transitions of each lifecycle. */
async function orchestration(dynamodbEndpoint: string): Promise<Orchestration> {
  const server = await startBenchServer({ dynamodbEndpoint, bootMs: 0, waitMs: 0, retryMs: 0 });
  try {
    const owners = await accounts(server, 6);
    await server.ask({ kind: 'recordCalls', on: true });
    const provisionToActiveMs: number[] = [];
    const instances: { id: number; owner: BenchAccount }[] = [];
    for (const owner of owners) {
      const startedAt = performance.now();
      const created = await server.call('POST', '/api/v1/instances', {
        apiKey: owner.apiKey,
        body: { project_name: 'orch', flavor: 's-1vcpu-2gb' },
      });
      const id = created.body.instance_id as number;
      await until(
        async () =>
          (await server.call('GET', `/api/v1/instances/${id}`, { apiKey: owner.apiKey })).body.status === 'active' ? true : undefined,
        'active',
        30_000,
        10,
      );
      provisionToActiveMs.push(performance.now() - startedAt);
      instances.push({ id, owner });
      await server.ask({ kind: 'idle' });
    }
    const createCalls = (await server.ask<RequestCalls[]>({ kind: 'takeCalls' })).filter((c) => c.route === 'CreateInstance');
    const taskStats = await server.ask<Record<string, TaskStats>>({ kind: 'takeTaskStats' });
    await server.ask({ kind: 'recordCalls', on: false });
    const [first] = instances;
    if (first) {
      await server.call('POST', `/api/v1/instances/${first.id}/actions`, {
        apiKey: first.owner.apiKey,
        body: { type: 'resize', flavor: 's-2vcpu-4gb' },
      });
      await server.ask({ kind: 'idle' });
      await server.call('DELETE', `/api/v1/instances/${first.id}`, { apiKey: first.owner.apiKey });
      await server.ask({ kind: 'idle' });
    }
    const executions = await server.ask<ExecutionSummary[]>({ kind: 'executions' });
    const byWorkflow = Object.fromEntries(
      ['provision', 'resize', 'delete'].map((workflow) => {
        const runs = executions.filter((e) => e.workflow === workflow && e.status === 'SUCCEEDED');
        const mean = (pick: (e: ExecutionSummary) => number) => runs.reduce((sum, e) => sum + pick(e), 0) / Math.max(1, runs.length);
        return [
          workflow,
          {
            transitions: mean((e) => e.transitions),
            taskInvocations: mean((e) => e.taskInvocations),
            durationMs: mean((e) => e.durationMs),
          },
        ];
      }),
    );
    return { provisionToActiveMs, executions: byWorkflow, taskStats, createCalls };
  } finally {
    await server.stop();
  }
}

export interface SlidingWindowPhase {
  readonly phase: string;
  /** When it started, in seconds from the minute boundary the bursts straddle (the server's clock). */
  readonly startedAtSeconds: number;
  readonly clients: number;
  readonly sent: number;
  readonly accepted: number;
  readonly refused: number;
  /** Answers other than 200 and 429 (none expected). */
  readonly other: number;
}

export interface SlidingWindowProof {
  readonly limit: number;
  readonly windowSeconds: number;
  readonly phases: SlidingWindowPhase[];
  /** Accepted requests, from the server's own entries. */
  readonly accepted: number;
  /** The most accepted requests in any interval of the window's length, and where the busiest one starts. */
  readonly maxInAnyWindow: number;
  readonly busiestFromSeconds: number;
  /** What a clock-aligned window would have counted in the minute before the boundary and the one after. */
  readonly perClockMinute: [number, number];
  /** Requests of the first burst accepted after the boundary: a window aligned to the minute would have let the second burst have the rest of its 60. */
  readonly firstBurstAfterBoundary: number;
  readonly holds: boolean;
}

/**
 * 5. The sliding window, proven from the server's side: one account, 100 parallel clients, bursts on both sides of a
 * minute boundary (where a clock-aligned window would start afresh), one just before the first burst's requests
 * leave the window, and a stream across the moment they leave. Every accepted request's entry, as the server wrote
 * it, is recorded; no interval of 60 s may hold more than 60 of them.
 */
async function slidingWindowProof(server: BenchServer): Promise<SlidingWindowProof> {
  const [account] = await accounts(server, 1);
  if (!account) throw new Error('no account');
  const { limit, windowSeconds } = rateLimits.general;
  const windowMs = windowSeconds * 1000;
  const minute = Math.ceil((Date.now() + 5_000) / 60_000) * 60_000;
  const phases: SlidingWindowPhase[] = [];
  const entries = async () => (await server.ask<AcceptedEntry[]>({ kind: 'windowEntries' })).map((entry) => entry.atMs);
  const phase = async (name: string, atMs: number, clients: number, requests = clients) => {
    await sleep(Math.max(0, atMs - Date.now()));
    const startedAtSeconds = (Date.now() - minute) / 1000;
    const before = (await entries()).length;
    const load = await runLoad(
      server,
      { name, method: 'GET', expectedStatus: 200, request: () => ({ path: '/api/v1/instances', headers: bearer(account) }) },
      requests,
      clients,
    );
    const accepted = (await entries()).length - before;
    phases.push({
      phase: name,
      startedAtSeconds,
      clients,
      sent: load.requests,
      accepted,
      refused: load.tooMany,
      other: load.requests - accepted - load.tooMany,
    });
    log(`sliding window: ${name}`);
  };

  await server.ask({ kind: 'recordWindows', on: true });
  try {
    await phase('burst just before a minute boundary', minute - 500, 100);
    await phase('burst just after it', minute + 500, 100);
    const firstBurst = await entries();
    const firstBurstAfterBoundary = firstBurst.filter((t) => t >= minute).length;
    if (firstBurst.length === 0) throw new Error('no accepted request was recorded');
    const firstLeaves = Math.min(...firstBurst) + windowMs;
    await phase('burst from 1 s before the first accepted request leaves the window', firstLeaves - 1_000, 100);
    await phase('stream of 800 while the first burst leaves', firstLeaves - 500, 100, 800);
    const times = await entries();
    const busiest = busiestWindow(times, windowMs);
    const inMinute = (from: number) => times.filter((t) => t >= from && t < from + 60_000).length;
    return {
      limit,
      windowSeconds,
      phases,
      accepted: times.length,
      maxInAnyWindow: busiest.count,
      busiestFromSeconds: (busiest.fromMs - minute) / 1000,
      perClockMinute: [inMinute(minute - 60_000), inMinute(minute)],
      firstBurstAfterBoundary,
      holds: busiest.count <= limit,
    };
  } finally {
    await server.ask({ kind: 'recordWindows', on: false });
  }
}

// `--report`: bench/results.md written again from bench/results.json, figures unchanged; nothing is measured.
if (process.argv.includes('--report')) {
  writeReportFiles(JSON.parse(readFileSync(resultsFile, 'utf8')) as BenchResults);
  process.exit(0);
}
const dynamodb = await startDynamoDbLocal();
const server = await startBenchServer({ dynamodbEndpoint: dynamodb.endpoint, bootMs: 200, waitMs: 250, retryMs: 50 });
try {
  log('service up');
  // `npm run bench -- --sliding-window`: only the proof (about two minutes), printed; the result files stay as they are.
  if (process.argv.includes('--sliding-window')) process.stdout.write(`${JSON.stringify(await slidingWindowProof(server), null, 2)}\n`);
  // `--cold-start` and `--request-floor`: only that measurement, printed; the result files stay as they are.
  else if (process.argv.includes('--cold-start')) process.stdout.write(`${JSON.stringify(await coldStarts(server), null, 2)}\n`);
  else if (process.argv.includes('--request-floor')) process.stdout.write(`${JSON.stringify(await requestFloor(server), null, 2)}\n`);
  else await fullRun();
} finally {
  await server.stop();
  await dynamodb.stop();
}

async function fullRun(): Promise<void> {
  const loadAtStart = loadavg();
  const overhead = await requestOverhead(server);
  const floorSideBySide = await requestFloor(server);
  const budget = await budgetUnderConcurrency(server);
  const calls = await roundTrips(server);
  log('round trips recorded');
  const cold = await coldStarts(server);
  const orchestrated = await orchestration(dynamodb.endpoint);
  log('orchestration measured');
  const slidingWindow = await slidingWindowProof(server);
  const provisions = orchestrated.provisionToActiveMs.length;
  const createP50 = overhead.find((o) => o.scenario === 'POST /api/v1/instances')?.p50Ms ?? 0;
  const provisionCost = costOf({
    apiRequests: provisions,
    lambdaInvocations: provisions * (1 + (orchestrated.executions.provision?.taskInvocations ?? 0)),
    lambdaMs: provisions * createP50 + (orchestrated.taskStats.provision?.totalMs ?? 0),
    transitions: provisions * (orchestrated.executions.provision?.transitions ?? 0),
    calls: [...orchestrated.createCalls.flatMap((c) => c.shapes), ...(orchestrated.taskStats.provision?.shapes ?? [])],
  });
  const results: BenchResults = {
    ranAt: new Date().toISOString(),
    durationSeconds: Math.round((Date.now() - started) / 1000),
    machine: { node: process.version, cpus: cpus().length, loadAtStart, loadAtEnd: loadavg() },
    commit: commitOf(),
    overhead,
    requestFloor: floorSideBySide,
    budget,
    roundTrips: calls,
    coldStarts: cold,
    orchestration: orchestrated,
    provisionCostPer1000: Object.fromEntries(
      Object.entries(provisionCost)
        .filter((entry): entry is [string, number] => typeof entry[1] === 'number')
        .map(([part, dollars]) => [part, (dollars * 1000) / Math.max(1, provisions)]),
    ),
    slidingWindow,
  };
  writeReportFiles(results);
}

/**
 * Writes bench/results.json and bench/results.md from a run's results (`--report` writes the report again from
 * bench/results.json, figures unchanged, after a change to the report's wording).
 */
function writeReportFiles(results: BenchResults): void {
  mkdirSync(resolve(repositoryRoot, 'bench'), { recursive: true });
  writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  const baselineFile = resolve(repositoryRoot, 'bench/baseline.json');
  const baseline = existsSync(baselineFile) ? (JSON.parse(readFileSync(baselineFile, 'utf8')) as BenchResults) : undefined;
  // Cold starts of the code before the tracing and loading changes, recorded once with `npm run bench -- --cold-start`.
  const beforeFile = resolve(repositoryRoot, 'bench/cold-start-before.json');
  const coldStartBefore = existsSync(beforeFile) ? (JSON.parse(readFileSync(beforeFile, 'utf8')) as ColdStart[]) : undefined;
  // The scale section comes from `npm run bench:scale`, which runs on its own; it is kept as it is.
  const scale = currentScaleSection();
  writeFileSync(
    resolve(repositoryRoot, 'bench/results.md'),
    `${writeReport(results, baseline, coldStartBefore)}${scale ? `\n\n${scale}\n` : ''}`,
  );
  log('wrote bench/results.md and bench/results.json');
}

/** The commit measured, and whether the code measured differed from it (a report of uncommitted code names none). */
function commitOf(): { id: string; clean: boolean } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repositoryRoot, encoding: 'utf8' }).trim();
  const changed = git('status', '--porcelain', '--', ...MEASURED_PATHS);
  return { id: git('rev-parse', 'HEAD'), clean: changed === '' };
}
