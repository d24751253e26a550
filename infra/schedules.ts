import type { FunctionAccess } from '../shared/access';
import { workflowNames } from '../shared/workflows/names';

/**
 * Scheduled jobs, shared by the CDK stack (EventBridge Scheduler) and the local runtime (timers): what runs, how
 * often, and what it may touch.
 */
export interface ScheduleDefinition {
  readonly entry: string;
  readonly everyMinutes: number;
  /** Whether the local runtime also runs it once at start. */
  readonly runAtLocalStart: boolean;
  /** At most one run at a time (reserved concurrency 1): a run still going when the next is due makes it skip. */
  readonly exclusive?: boolean;
  readonly access: FunctionAccess;
}

export const schedules = {
  reconciler: {
    entry: 'functions/scheduled/reconciler.ts',
    everyMinutes: 5,
    runAtLocalStart: true,
    access: {
      // The sparse in-flight, running-job and sweep indexes, by shard, then the items by key: no Scan. The sweep's
      // cursor is an item of the counters table.
      tables: {
        instances: ['Query', 'GetItem', 'BatchGetItem', 'UpdateItem'],
        jobs: ['Query', 'BatchGetItem', 'GetItem', 'PutItem', 'UpdateItem'],
        counters: ['GetItem', 'PutItem', 'UpdateItem'],
      },
      startsWorkflows: workflowNames,
      upstream: true,
    },
  },
  meter: {
    entry: 'functions/scheduled/meter.ts',
    everyMinutes: 5,
    runAtLocalStart: false,
    // Two runs at once charge nothing twice (each charge is conditional), but they would race to pause accounts.
    exclusive: true,
    access: {
      tables: {
        // The sparse meter index, by shard, then the instances by key: no Scan.
        instances: ['Query', 'BatchGetItem', 'GetItem', 'UpdateItem'],
        accounts: ['GetItem', 'UpdateItem'],
        ledger: ['PutItem'],
        jobs: ['GetItem', 'PutItem', 'UpdateItem'],
        counters: ['UpdateItem'],
      },
      startsWorkflows: ['power'],
      upstream: true,
    },
  },
} as const satisfies Record<string, ScheduleDefinition>;

export type ScheduleName = keyof typeof schedules;
