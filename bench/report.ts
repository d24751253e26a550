import type { ColdStart } from './cold-start';
import type { LoadResult } from './load';
import type { RequestCalls } from './protocol';
import type { Orchestration, SlidingWindowProof } from './run';

export interface RequestFloor {
  readonly floor: LoadResult;
  readonly ours: LoadResult;
  /** GetInstance's DynamoDB calls in a second, recorded side-by-side pass under the same load. */
  readonly oursUnderLoad: {
    readonly requests: number;
    readonly meanCalls: number;
    readonly meanRounds: number;
    /** Requests whose take from the upstream request budget needed more than one round of conditional writes. */
    readonly collided: number;
  };
}

/** GetInstance at many connections at once, every take from the upstream request budget recorded. */
export interface BudgetConcurrency {
  readonly connections: number;
  readonly load: LoadResult;
  readonly requests: number;
  /** Requests that took (or tried to take) a token: those of a settled server. */
  readonly takes: number;
  /** Conditional writes those takes made in all. */
  readonly writes: number;
  /** Takes that needed more than one round of writes. */
  readonly collided: number;
  /** Takes granted; the others were refused and answered from stored state, marked so. */
  readonly granted: number;
}

export interface BenchResults {
  readonly ranAt: string;
  readonly durationSeconds: number;
  /** The machine, with its load (1, 5 and 15-minute averages) when the run started and ended. */
  readonly machine: { node: string; cpus: number; loadAtStart?: number[]; loadAtEnd?: number[] };
  /** The commit measured, and whether the measured code (shared/, functions/, infra/) was as committed. */
  readonly commit?: { id: string; clean: boolean };
  readonly overhead: LoadResult[];
  /** The raw-SDK request floor and GetInstance, side by side (absent in runs before it was measured). */
  readonly requestFloor?: RequestFloor;
  /** The upstream budget under concurrency (absent in runs before it was measured). */
  readonly budget?: BudgetConcurrency;
  readonly roundTrips: RequestCalls[];
  readonly coldStarts: ColdStart[];
  readonly orchestration: Orchestration;
  readonly provisionCostPer1000: Record<string, number>;
  readonly slidingWindow: SlidingWindowProof;
}

const fixed = (value: number, digits = 1) => value.toFixed(digits);
const table = (header: string[], rows: (string | number)[][]) =>
  [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');

/** Targets the report checks itself against: cold start and request latency are ratios to a raw-SDK floor. */
export const targets = { authRounds: 2, coldStartRatio: 1.25, requestFloorRatio: 1.2, budgetCollisionShare: 0.05 } as const;

/**
 * Sequential DynamoDB rounds a request of these routes may take; the others are held to their rounds before own work.
 * An action's write follows its server's upstream read (so that a key revoked during the read stops it), and the
 * budget take that read needs comes before it: one round more than a delete.
 */
export const roundTargets: Readonly<Record<string, number>> = { GetInstance: 2, InstanceAction: 4, DeleteInstance: 3, CreateInstance: 3 };

/** GetInstance cold-started with source maps loaded, paired with itself without them. */
export const SOURCE_MAPS = 'GetInstance with --enable-source-maps';

/** The SDK floor's GetItem through the libraries every function is built on (bench/stack-floor-handler.ts). */
export const STACK_FLOOR = 'stack-floor';
export const STACK_FLOOR_IMPORT_ONLY = 'stack-floor, importing only';

/** The cold-start floor that makes GetInstance's calls (the request floor's handler, cold). */
export const SAME_CALLS_FLOOR = 'sdk-floor, making GetInstance calls';

const verdict = (ratio: number, target: number) => (ratio <= target ? 'met' : `missed by ${fixed(ratio / target, 2)}×`);

function overheadSection(results: BenchResults): string {
  const floor = results.overhead[0];
  if (!floor) return '';
  return table(
    ['scenario', 'requests', 'p50 ms', 'p99 ms', 'req/s', 'p50 ÷ floor', 'req/s ÷ floor', 'unexpected status'],
    results.overhead.map((r) => [
      r.scenario,
      r.requests,
      fixed(r.p50Ms),
      fixed(r.p99Ms),
      fixed(r.requestsPerSecond, 0),
      fixed(r.p50Ms / Math.max(floor.p50Ms, 0.5), 1),
      fixed(r.requestsPerSecond / Math.max(floor.requestsPerSecond, 1), 2),
      r.unexpected,
    ]),
  );
}

function roundTripSection(results: BenchResults): string {
  return table(
    ['route', 'DynamoDB calls', 'sequential rounds', 'rounds before own work', 'target', 'calls in order'],
    results.roundTrips.map((r) => [
      r.route,
      r.calls,
      r.rounds,
      r.authRounds,
      roundTargets[r.route] === undefined
        ? `${r.authRounds <= targets.authRounds ? 'met' : 'missed'} (≤ ${targets.authRounds} before own work)`
        : `${r.rounds <= roundTargets[r.route]! ? 'met' : 'missed'} (≤ ${roundTargets[r.route]} rounds)`,
      r.shapes.map((s) => `${s.operation.replace('Command', '')}(${s.table}${s.items > 1 ? `×${s.items}` : ''})`).join(' → '),
    ]),
  );
}

/** Cold starts measured next to a floor, before (bench/cold-start-before.json) when one was recorded. */
function coldStartSection(results: BenchResults, before: ColdStart[] | undefined): string {
  const hello = results.coldStarts.find((c) => c.name === 'hello-world');
  const sdkFloor = results.coldStarts.find((c) => c.name === 'sdk-floor');
  if (!hello || !sdkFloor) return '';
  const stackFloors = [STACK_FLOOR, STACK_FLOOR_IMPORT_ONLY].flatMap((name) => results.coldStarts.filter((c) => c.name === name));
  const measured = results.coldStarts.filter((c) => c.paired?.floor === 'sdk-floor' && !stackFloors.includes(c));
  const stackMissed = measured.filter((c) => c.stackPaired && c.stackPaired.ratio > targets.coldStartRatio);
  const [stackServing, stackImporting] = stackFloors;
  const sameCalls = results.coldStarts.filter((c) => c.paired?.floor === SAME_CALLS_FLOOR);
  const missed = measured.filter((c) => (c.paired?.ratio ?? 0) > targets.coldStartRatio);
  const beforeRatio = (name: string) => before?.find((c) => c.name === name && c.paired?.floor === 'sdk-floor')?.paired?.ratio;
  const importOnly = missed.filter((c) => c.status === null);
  const worst = [...missed].sort((a, b) => (b.paired?.ratio ?? 0) - (a.paired?.ratio ?? 0))[0];
  const why =
    missed.length === 0
      ? `Every API function is within ${targets.coldStartRatio}× the SDK floor.`
      : [
          `${measured.length - missed.length} of ${measured.length} API functions are within ${targets.coldStartRatio}× the SDK floor; ${missed.length} miss it.`,
          worst
            ? `The furthest is ${worst.name} (${fixed(worst.paired?.ratio ?? 0, 2)}×): it loads ${worst.bundleKb} KB of code at start against the floor's ${sdkFloor.bundleKb} KB, all of which V8 compiles at import${worst.status === null ? '' : `, and its request makes ${callsOf(results, worst.name)} against the floor's one GetItem, each the first of its kind on a cold client`}.`
            : '',
          importOnly.length
            ? `The ${importOnly.length} that miss it measured importing only do so by the code they load: ${Math.min(...importOnly.map((c) => c.bundleKb))}–${Math.max(...importOnly.map((c) => c.bundleKb))} KB to compile against ${sdkFloor.bundleKb} KB.`
            : '',
          stackServing?.paired && stackImporting?.paired
            ? `The stack floor (bench/stack-floor-handler.ts: the SDK floor's GetItem made through the libraries every function is built on, a middy handler, a Powertools logger and metrics and one zod schema, and nothing of ours) takes ${fixed(stackServing.paired.ratio, 2)}× the SDK floor serving that request and ${fixed(stackImporting.paired.ratio, 2)}× importing only: that much of the ${targets.coldStartRatio}× is spent before any code of the service runs. Against the stack floor, measured in the same turns, ${measured.length - stackMissed.length} of ${measured.length} are within ${targets.coldStartRatio}×${stackMissed.length ? ` (${stackMissed.map((c) => `${c.name} ${fixed(c.stackPaired!.ratio, 2)}×`).join(', ')} not)` : ''}.`
            : '',
          sameCalls[0]?.paired
            ? `Against a floor that makes GetInstance's own calls, cold, GetInstance takes ${fixed(sameCalls[0].paired.ratio, 2)}× (target ${targets.coldStartRatio}×: ${verdict(sameCalls[0].paired.ratio, targets.coldStartRatio)}).`
            : '',
        ].join(' ');
  const maps = results.coldStarts.find((c) => c.name === SOURCE_MAPS)?.paired;
  const mapsNote = maps
    ? ` Source maps: GetInstance started with \`--enable-source-maps\` takes ${fixed(maps.ratio, 2)}× itself without (${maps.ratio > 1 ? `${fixed(maps.floorServedAtMs * (maps.ratio - 1), 0)} ms more per cold start, Node parsing the map at import` : 'no cost this run could tell from the noise'}); the functions are deployed without it, the maps written next to each bundle for reading a stack trace.`
    : '';
  return `Each API function is cold-started in turns with the SDK floor (the AWS SDK's DynamoDB client and one GetItem, nothing of ours; bench/sdk-floor-handler.ts), so that both meet the machine in the same state; "÷ SDK floor" is the fastest of the function's samples over the fastest of the floor's (other work on the machine only ever adds time), and the median of the per-pair ratios is shown beside it. A function the bench has no request for is measured importing only, against the floor importing only. ${why}${mapsNote}

${table(
  [
    'function',
    'request (status)',
    'KB loaded at start',
    'import ms',
    'process start → first response ms',
    'floor, same samples ms',
    '÷ SDK floor',
    'median of pairs',
    `target ≤ ${targets.coldStartRatio}×`,
    '÷ stack floor',
    ...(before ? ['÷ SDK floor before'] : []),
    '÷ hello-world',
  ],
  [hello, sdkFloor, ...stackFloors, ...measured].map((c) => {
    const ratio = c === hello ? hello.servedAtMs / sdkFloor.servedAtMs : c === sdkFloor ? 1 : (c.paired?.ratio ?? 0);
    const previous = beforeRatio(c.name);
    return [
      c.name,
      c.status === null ? 'import only' : c.status,
      c.bundleKb,
      fixed(c.importMs),
      fixed(c.servedAtMs),
      c.paired ? fixed(c.paired.floorServedAtMs) : '–',
      fixed(ratio, 2),
      c.paired?.medianPairRatio === undefined ? '–' : fixed(c.paired.medianPairRatio, 2),
      c === hello || c === sdkFloor ? '–' : verdict(ratio, targets.coldStartRatio),
      c.stackPaired ? fixed(c.stackPaired.ratio, 2) : '–',
      ...(before ? [previous === undefined ? '–' : fixed(previous, 2)] : []),
      fixed(c.servedAtMs / hello.servedAtMs, 2),
    ];
  }),
)}${
    sameCalls.length
      ? `\n\n${table(
          [
            'function',
            'process start → first response ms',
            `${SAME_CALLS_FLOOR}, same samples ms`,
            '÷ that floor',
            `target ≤ ${targets.coldStartRatio}×`,
          ],
          sameCalls.map((c) => [
            c.name,
            fixed(c.servedAtMs),
            fixed(c.paired?.floorServedAtMs ?? 0),
            fixed(c.paired?.ratio ?? 0, 2),
            verdict(c.paired?.ratio ?? 0, targets.coldStartRatio),
          ]),
        )}`
      : ''
  }`;
}

/** What a route's request did, from section 2. */
function callsOf(results: BenchResults, route: string): string {
  const recorded = results.roundTrips.find((r) => r.route === route);
  const upstream = ['GetInstance', 'InstanceAction', 'CreateInstance'].includes(route) ? ', an upstream call' : '';
  return recorded
    ? `${recorded.calls} DynamoDB calls in ${recorded.rounds} rounds${upstream}${route === 'GetInstance' || route === 'ListInstances' ? ' and opens sealed secrets' : ''}`
    : 'its own calls';
}

/** GetInstance against the raw-SDK handler that makes its calls, side by side under one load. */
function requestFloorSection(results: BenchResults): string {
  const measured = results.requestFloor;
  if (!measured) return 'Not measured in this run.';
  const { floor, ours, oursUnderLoad: load } = measured;
  const ratio = ours.p50Ms / Math.max(floor.p50Ms, 0.5);
  const calls = `Under the same load GetInstance made on average ${fixed(load.meanCalls, 1)} DynamoDB calls in ${fixed(load.meanRounds, 1)} sequential rounds (a recorded side-by-side pass of ${load.requests} requests), against the floor's ${FLOOR_CALLS.calls} in ${FLOOR_CALLS.rounds}; in ${load.requests ? fixed((100 * load.collided) / load.requests, 0) : 0} % of requests its take from the upstream request budget needed more than one round of conditional writes.`;
  const why =
    ratio <= targets.requestFloorRatio
      ? `GetInstance's p50 is ${fixed(ratio, 2)}× the floor's: met (target ≤ ${targets.requestFloorRatio}×). ${calls}`
      : `GetInstance's p50 is ${fixed(ratio, 2)}× the floor's, ${fixed(ours.p50Ms - floor.p50Ms, 1)} ms more: missed by ${fixed(ratio / targets.requestFloorRatio, 2)}× (target ≤ ${targets.requestFloorRatio}×). ${calls} The rest is work in our process, on the one event loop the local service shares: the middleware chain, zod parsing of every item read, and opening the sealed root password and private key.`;
  return [
    `Both served by the same gateway in one run: ${LOAD_NOTE(floor)}. The floor is bench/sdk-floor-handler.ts: the AWS SDKs alone (no middy, no Powertools, no zod) making GetInstance's DynamoDB calls in GetInstance's order and rounds (section 2), one conditional write for the upstream budget, and the upstream read with the instance's sealed secrets opened beside it by the Encryption SDK's own packages. ${why}`,
    '',
    table(
      ['scenario', 'requests', 'p50 ms', 'p99 ms', 'p50 ÷ floor', `target ≤ ${targets.requestFloorRatio}×`, 'unexpected status'],
      [floor, ours].map((r) => {
        const own = r.p50Ms / Math.max(floor.p50Ms, 0.5);
        return [
          r.scenario,
          r.requests,
          fixed(r.p50Ms),
          fixed(r.p99Ms),
          fixed(own, 2),
          r === floor ? '–' : verdict(own, targets.requestFloorRatio),
          r.unexpected,
        ];
      }),
    ),
  ].join('\n');
}

/** What the floor handler does for a settled server (bench/sdk-floor-handler.ts). */
const FLOOR_CALLS = { calls: 5, rounds: 2 } as const;

const LOAD_NOTE = (r: LoadResult) =>
  `${r.connections} clients, each sending one request to each in turn (which goes first alternates), ${r.requests} of each, timed per request`;

function orchestrationSection(results: BenchResults): string {
  const { orchestration: o } = results;
  const sorted = [...o.provisionToActiveMs].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  return [
    `POST create → \`active\` with the upstream booting instantly and no waits: median ${fixed(median, 0)} ms over ${sorted.length} provisions (polled every 10 ms).`,
    '',
    table(
      ['lifecycle', 'state transitions', 'Lambda task invocations', 'execution ms (no waits)'],
      Object.entries(o.executions).map(([workflow, e]) => [
        workflow,
        fixed(e.transitions, 0),
        fixed(e.taskInvocations, 0),
        fixed(e.durationMs, 0),
      ]),
    ),
    '',
    'AWS cost per 1,000 provisions at list prices (us-east-1, on-demand; logs, X-Ray and data transfer not included; a real provision first checks its server after 40 s, then every 10 s, so a 45 s boot adds 3 transitions and 1 invocation to these figures, tested in test/integration/provision-polling.test.ts; and active waits for SSH: here it answers at once, while a server whose SSH answers d s after it runs costs 3 transitions and 1 invocation (one TCP probe) per further probe, at 2, 4, 6, 9, 14, 21, 32 s…: 9 transitions for d = 5 s, 18 for d = 20 s, tested in test/unit/ssh-readiness.test.ts):',
    '',
    table(
      ['part', 'USD per 1,000 provisions'],
      Object.entries(results.provisionCostPer1000).map(([part, dollars]) => [part, fixed(dollars, 4)]),
    ),
  ].join('\n');
}

function slidingWindowSection(results: BenchResults): string {
  const proof = results.slidingWindow;
  const seconds = (value: number) => `${value >= 0 ? '+' : '−'}${fixed(Math.abs(value), 1)} s`;
  return [
    `One account (general limit ${proof.limit} in any ${proof.windowSeconds} s), 100 parallel clients. Times are from the minute boundary the first two bursts straddle (this machine's clock). Every accepted request's window entry is recorded as the server wrote it.`,
    '',
    table(
      ['phase', 'started at', 'parallel clients', 'sent', 'accepted', 'refused (429)', 'other'],
      proof.phases.map((p) => [p.phase, seconds(p.startedAtSeconds), p.clients, p.sent, p.accepted, p.refused, p.other]),
    ),
    '',
    `**Most accepted in any ${proof.windowSeconds}-second interval: ${proof.maxInAnyWindow}** (limit ${proof.limit}; the busiest interval starts at ${seconds(proof.busiestFromSeconds)}) over ${proof.accepted} accepted requests: the limit ${proof.holds ? 'holds' : 'is BROKEN'}. Later phases are accepted only as many as the first burst's requests had left the window by then.`,
    '',
    `A window aligned to the clock minute would have counted ${proof.perClockMinute[0]} accepted requests in the minute before the boundary and ${proof.perClockMinute[1]} in the minute after; it would have started afresh at the boundary and let the burst after it have up to ${proof.limit - proof.firstBurstAfterBoundary} more, where the sliding window accepted ${proof.phases[1]?.accepted ?? 0}.`,
  ].join('\n');
}

/** Before (bench/baseline.json, the first run) and after (this run), for what the improvements targeted. */
function improvementSection(results: BenchResults, baseline: BenchResults | undefined): string {
  if (!baseline) return 'No baseline recorded.';
  const helloRatio = (run: BenchResults, name: string) => {
    const hello = run.coldStarts.find((c) => c.name === 'hello-world')?.servedAtMs ?? 1;
    const found = run.coldStarts.find((c) => c.name === name);
    return found ? found.servedAtMs / hello : undefined;
  };
  const bundleKb = (run: BenchResults, name: string) => run.coldStarts.find((c) => c.name === name)?.bundleKb;
  const create = (run: BenchResults) => run.roundTrips.find((r) => r.route === 'CreateInstance');
  const createP50Ratio = (run: BenchResults) => {
    const floor = run.overhead[0]?.p50Ms ?? 1;
    const found = run.overhead.find((o) => o.scenario === 'POST /api/v1/instances');
    return found ? found.p50Ms / Math.max(floor, 0.5) : undefined;
  };
  const show = (value: number | undefined, digits = 0) => (value === undefined ? '–' : fixed(value, digits));
  const rows: (string | number)[][] = [
    ['bundle KB, ListInstances', show(bundleKb(baseline, 'ListInstances')), show(bundleKb(results, 'ListInstances'))],
    ['bundle KB, CreateInstance', show(bundleKb(baseline, 'CreateInstance')), show(bundleKb(results, 'CreateInstance'))],
    [
      'cold start ÷ hello-world, ListInstances',
      show(helloRatio(baseline, 'ListInstances'), 2),
      show(helloRatio(results, 'ListInstances'), 2),
    ],
    [
      'cold start ÷ hello-world, CreateInstance',
      show(helloRatio(baseline, 'CreateInstance'), 2),
      show(helloRatio(results, 'CreateInstance'), 2),
    ],
    ['POST create: DynamoDB calls', show(create(baseline)?.calls), show(create(results)?.calls)],
    ['POST create: sequential DynamoDB rounds', show(create(baseline)?.rounds), show(create(results)?.rounds)],
    ['POST create: p50 ÷ floor p50 under load', show(createP50Ratio(baseline), 1), show(createP50Ratio(results), 1)],
  ];
  return [
    "- **zod imported as a namespace** (`import * as z from 'zod'`) instead of through its `z` object: esbuild can then drop the parts of zod a function does not use (all of its locales, among others), about 350 KB of every bundle.",
    '- **Instance ids reserved in blocks of 20**: each process takes a block with one atomic ADD and hands ids out locally, so most creates no longer wait for a sequence round trip before their transaction.',
    "- **Tracing without the X-Ray SDK, and heavy modules loaded on first use**: `shared/tracing.ts` sends the handler's, the AWS SDK calls' and the fetches' subsegments to the X-Ray daemon itself instead of Powertools Tracer; the Encryption SDK and the Secrets Manager client load when first needed, and GetInstance opens the sealed secrets while it reads the live state. Cold start ÷ SDK floor before and after is in section 3 (before: bench/cold-start-before.json).",
    '',
    table(['measure', `before (${baseline.ranAt.slice(0, 16)})`, 'after (this run)'], rows),
  ].join('\n');
}

/** The commit line a staleness check reads (test/unit/bench-report.test.ts): `at commit <40 hex digits>`. */
export const commitNote = (results: BenchResults): string =>
  results.commit ? `at commit ${results.commit.id}${results.commit.clean ? '' : ' (with uncommitted changes to the measured code)'}` : '';

const loadNote = ({ machine }: BenchResults): string =>
  machine.loadAtStart && machine.loadAtEnd
    ? `, load average ${machine.loadAtStart.map((l) => fixed(l, 2)).join(' / ')} at the start and ${machine.loadAtEnd.map((l) => fixed(l, 2)).join(' / ')} at the end (1 / 5 / 15 min)`
    : '';

function budgetSection(results: BenchResults): string {
  const measured = results.budget;
  if (!measured) return 'Not measured in this run.';
  const share = measured.takes ? measured.collided / measured.takes : 0;
  const refused = measured.takes - measured.granted;
  return [
    `GetInstance on ${measured.requests} requests from ${measured.connections} connections at once, every DynamoDB call recorded. Every request of a settled server takes one token from the shared budget (one item) with one conditional write, and never reads it first: it adds to the bucket, or sets it from now when the function last saw it full; adding commutes with every concurrent take, and only a take that meets the bucket just after another function took from it, or just as it fills up again, needs a second or third write. ${fixed(share * 100, 1)} % of takes collided, needing more than one round (target under ${targets.budgetCollisionShare * 100} %: ${share < targets.budgetCollisionShare ? 'met' : 'missed'}). ${refused} takes were refused, the live reads' half of the budget being spent, and their requests answered from stored state with \`Warning: 110 - "Response is Stale"\`; none failed for it.`,
    '',
    table(
      [
        'requests',
        'takes',
        'writes per take',
        'collided',
        'granted',
        'refused (stored state, marked)',
        'p50 ms',
        'p99 ms',
        'unexpected status',
      ],
      [
        [
          measured.requests,
          measured.takes,
          fixed(measured.takes ? measured.writes / measured.takes : 0, 2),
          `${measured.collided} (${fixed(share * 100, 1)} %)`,
          measured.granted,
          refused,
          fixed(measured.load.p50Ms),
          fixed(measured.load.p99Ms),
          measured.load.unexpected,
        ],
      ],
    ),
  ].join('\n');
}

export function writeReport(results: BenchResults, baseline?: BenchResults, coldStartBefore?: ColdStart[]): string {
  return [
    '# Benchmark results',
    '',
    `Produced by \`npm run bench\` ${commitNote(results)} on ${results.ranAt} (${results.durationSeconds} s, Node ${results.machine.node}, ${results.machine.cpus} cores${loadNote(results)}). Every figure is a count, or a ratio of two times measured in this same run, so they compare across runs on a noisy machine; absolute times are this machine's.`,
    '',
    '## 1. Request overhead',
    '',
    'Each endpoint through the local gateway (payload-v2 events, the real handlers, DynamoDB Local, the upstream simulator), next to the floor: the same gateway calling a handler that does no work. Load from autocannon in another process; requests rotate over accounts so that each stays within its rate limits.',
    '',
    overheadSection(results),
    '',
    `### GetInstance against a raw-SDK floor (target p50 ≤ ${targets.requestFloorRatio}× the floor's)`,
    '',
    requestFloorSection(results),
    '',
    `### The upstream request budget at ${results.budget?.connections ?? 32} connections (target: under ${targets.budgetCollisionShare * 100} % of takes collide)`,
    '',
    budgetSection(results),
    '',
    '## 2. DynamoDB round trips per request',
    '',
    'Counted by a middleware on the real DynamoDB client, one request at a time. A round is one step of the longest chain of calls each started after the one before it ended (the waits a request goes through, however its other calls overlap); "before own work" counts rounds up to and including the account read that ends authentication.',
    '',
    roundTripSection(results),
    '',
    '## 3. Cold start',
    '',
    'Each API function bundled exactly as deployed (esbuild, ESM, minified, same settings as the CDK construct), started in a fresh Node process that imports it and serves one real request against the local service.',
    '',
    coldStartSection(results, coldStartBefore),
    '',
    '## 4. Orchestration',
    '',
    orchestrationSection(results),
    '',
    "## 5. The sliding window, proven from the server's timestamps",
    '',
    slidingWindowSection(results),
    '',
    '## 6. Improvements, before and after',
    '',
    improvementSection(results, baseline),
    '',
  ].join('\n');
}
