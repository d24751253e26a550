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
