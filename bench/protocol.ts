/** Messages between the benchmark runner and the service process it measures. */
export interface ServerSettings {
  readonly dynamodbEndpoint: string;
  readonly bootMs: number;
  readonly waitMs: number;
  readonly retryMs: number;
}

export type Request =
  | { readonly id: number; readonly kind: 'accounts'; readonly count: number; readonly depositUsd: string }
  | { readonly id: number; readonly kind: 'session'; readonly accountId: string }
  | { readonly id: number; readonly kind: 'recordCalls'; readonly on: boolean }
  | { readonly id: number; readonly kind: 'takeCalls' }
  | { readonly id: number; readonly kind: 'takeTaskStats' }
  | { readonly id: number; readonly kind: 'executions' }
  | { readonly id: number; readonly kind: 'idle' }
  | { readonly id: number; readonly kind: 'recordWindows'; readonly on: boolean }
  | { readonly id: number; readonly kind: 'windowEntries' };

export interface Ready {
  readonly baseUrl: string;
  /** The environment the handlers run with, for functions loaded elsewhere against the same service. */
  readonly handlerEnv: Record<string, string>;
}

export interface BenchAccount {
  readonly accountId: string;
  readonly apiKey: string;
}

/** One DynamoDB call, reduced to what the cost model needs. */
export interface CallShape {
  readonly operation: string;
  readonly table: string;
  readonly items: number;
}

/** DynamoDB calls one request made: how many, in how many sequential rounds, and how many before its own work. */
export interface RequestCalls {
  readonly route: string;
  readonly calls: number;
  readonly rounds: number;
  /** Rounds up to and including the account read that ends authentication. */
  readonly authRounds: number;
  readonly shapes: CallShape[];
  /**
   * Conditional writes to the upstream request budget's items: one per take when nothing collides (two at once for a
   * take beside an action's write when its container last saw the bucket full).
   */
  readonly budgetWrites: number;
  /** Sequential rounds of those writes: one per take when nothing collides. */
  readonly budgetRounds: number;
  /** Whether one of them took its token (none did: the take was refused, and a read answered from stored state). */
  readonly budgetTaken: boolean;
}

/** What the workflow steps of one state machine did while recording. */
export interface TaskStats {
  readonly invocations: number;
  readonly totalMs: number;
  readonly shapes: CallShape[];
}

export interface ExecutionSummary {
  readonly name: string;
  readonly workflow: string;
  readonly status: string;
  readonly transitions: number;
  readonly taskInvocations: number;
  readonly durationMs: number;
}

export const NOOP_ROUTE = { name: 'BenchNoop', path: '/bench/noop', entry: 'bench/noop-handler.ts' } as const;

/** The request floor: GetInstance's DynamoDB calls and upstream read made with the AWS SDK alone, by the same gateway. */
export const SDK_FLOOR_ROUTE = {
  name: 'BenchSdkFloor',
  path: '/bench/sdk-floor/instances/{instance_id}',
  entry: 'bench/sdk-floor-handler.ts',
} as const;

/** A request the general rate limit accepted: its window's counter and the entry's time on the server's clock. */
export interface AcceptedEntry {
  readonly counter: string;
  readonly atMs: number;
}
