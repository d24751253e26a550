import autocannon from 'autocannon';
import type { BenchServer } from './client';

export interface LoadResult {
  readonly scenario: string;
  readonly requests: number;
  readonly connections: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requestsPerSecond: number;
  /** Answers outside the expected status (any one of them makes the numbers suspect). */
  readonly unexpected: number;
  /** 429 answers among them. */
  readonly tooMany: number;
}

export interface Scenario {
  readonly name: string;
  readonly method: 'GET' | 'POST';
  readonly expectedStatus: number;
  /** One request's path, headers and body, for the i-th request (rotating over accounts keeps each under its limits). */
  readonly request: (i: number) => { path: string; headers?: Record<string, string>; body?: unknown };
}

/** A floor is what the service is measured against: one that answered anything unexpected makes every ratio void. */
export function floorAnsweredAsExpected(result: LoadResult): LoadResult {
  if (result.unexpected > 0)
    throw new Error(
      `the floor "${result.scenario}" answered ${result.unexpected} of ${result.requests} requests with an unexpected status`,
    );
  return result;
}

/** Runs a fixed number of requests at a fixed concurrency against the service; bounded in count and time. */
export async function runLoad(server: BenchServer, scenario: Scenario, requests: number, connections: number): Promise<LoadResult> {
  let issued = 0;
  const result = await autocannon({
    url: server.baseUrl,
    connections,
    amount: requests,
    timeout: 10,
    duration: 60,
    requests: [
      {
        method: scenario.method,
        setupRequest: (request) => {
          const { path, headers = {}, body } = scenario.request(issued++);
          return {
            ...request,
            path,
            headers: { ...request.headers, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          };
        },
      },
    ],
  });
  const stats = (result.statusCodeStats ?? {}) as Record<string, { count: number } | undefined>;
  const expected = stats[String(scenario.expectedStatus)]?.count ?? 0;
  return {
    scenario: scenario.name,
    requests: result.requests.total,
    connections,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requestsPerSecond: result.requests.average,
    unexpected: result.requests.total - expected,
    tooMany: stats['429']?.count ?? 0,
  };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;

/**
 * Runs scenarios side by side under one load: each of `connections` clients sends one request of each scenario in
 * turn (which one goes first alternates), `requestsEach` of each in all, so that every scenario meets the same
 * concurrency at the same moments and any drift of the machine falls on all of them alike. Latency is timed per
 * request, from sending to the last byte of the answer.
 */
export async function runSideBySide(
  server: BenchServer,
  scenarios: readonly Scenario[],
  requestsEach: number,
  connections: number,
): Promise<LoadResult[]> {
  const latencies = scenarios.map((): number[] => []);
  const statuses = scenarios.map(() => new Map<number, number>());
  let nextRound = 0;
  const started = performance.now();
  const client = async () => {
    for (let round = nextRound++; round < requestsEach; round = nextRound++) {
      const order = scenarios.map((_, i) => i);
      if (round % 2 === 1) order.reverse();
      for (const index of order) {
        const scenario = scenarios[index]!;
        const { path, headers = {}, body } = scenario.request(round);
        const sent = performance.now();
        const response = await fetch(`${server.baseUrl}${path}`, {
          method: scenario.method,
          headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        }).then(
          async (answer) => {
            await answer.arrayBuffer();
            return answer.status;
          },
          () => 0,
        );
        latencies[index]!.push(performance.now() - sent);
        statuses[index]!.set(response, (statuses[index]!.get(response) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, client));
  const seconds = (performance.now() - started) / 1000;
  return scenarios.map((scenario, i) => {
    const sorted = latencies[i]!.sort((a, b) => a - b);
    const counts = statuses[i]!;
    return {
      scenario: scenario.name,
      requests: sorted.length,
      connections,
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      requestsPerSecond: sorted.length / seconds,
      unexpected: sorted.length - (counts.get(scenario.expectedStatus) ?? 0),
      tooMany: counts.get(429) ?? 0,
    };
  });
}
