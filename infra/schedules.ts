import type { FunctionAccess } from '../shared/access';
import { lifecycleWorkflowNames } from '../shared/workflow-names';

/**
 * Scheduled jobs, shared by the CDK stack (EventBridge Scheduler) and the local runtime (timers): what runs, how
 * often, and what it may touch.
 */
export interface ScheduleDefinition {
  readonly entry: string;
  readonly access: FunctionAccess;
  readonly everyMinutes: number;
  /** Whether the local runtime also runs it once at start. */
  readonly runAtLocalStart: boolean;
}

export const schedules = {
  reconciler: {
    entry: 'functions/scheduled/reconciler.ts',
    everyMinutes: 5,
    runAtLocalStart: true,
    access: {
      // The sparse in-flight, running-job and sweep indexes, by shard, then the items by key: no Scan. The sweep's
      // cursor, and its book of orphaned servers waiting (with its guard), are items of the counters table.
      tables: {
        instances: ['Query', 'GetItem', 'BatchGetItem', 'UpdateItem'],
        jobs: ['Query', 'BatchGetItem', 'GetItem', 'PutItem', 'UpdateItem'],
        counters: ['GetItem', 'PutItem', 'UpdateItem'],
        // A change of rate it settles (a server lost, found again, drift followed) moves the account's checkpoint; the
        // sweep holds billing pauses (the accounts of running servers, read in batches; a power-off of each).
        accounts: ['BatchGetItem', 'GetItem', 'UpdateItem', 'ConditionCheckItem'],
        ledger: ['PutItem'],
      },
      startsWorkflows: lifecycleWorkflowNames,
      upstream: true,
    },
  },
  topUps: {
    entry: 'functions/scheduled/reconcile-top-ups.ts',
    everyMinutes: 5,
    runAtLocalStart: true,
    // The open top-ups (their sparse index, then the items; a checkout whose opening timed out asked for again with the
    // account read); a credit or a closure as a webhook would make it, and what
    // a credit leads to (the account's review: the pause lifted or, still at zero, its running servers powered off;
    // the warnings; an auto-recharge top-up).
    access: {
      tables: {
        topUps: ['Query', 'BatchGetItem', 'GetItem', 'PutItem', 'UpdateItem'],
        ledger: ['PutItem'],
        accounts: ['GetItem', 'UpdateItem', 'ConditionCheckItem'],
        instances: ['Query', 'BatchGetItem', 'GetItem', 'UpdateItem'],
        jobs: ['GetItem', 'PutItem', 'UpdateItem'],
        counters: ['GetItem', 'UpdateItem'],
      },
      startsWorkflows: ['power'],
      upstream: true,
      payments: true,
    },
  },
  reviews: {
    // Billing by checkpoints: the accounts due for review (projected exhaustion, runway warnings, auto-recharge, the
    // daily statement) from their sparse index, every minute; and instances still metered the old way, moved.
    entry: 'functions/scheduled/review-accounts.ts',
    everyMinutes: 1,
    runAtLocalStart: true,
    access: {
      tables: {
        // The review: the account (read; its checkpoint, pause, warning and failures moved), the statement's entry.
        accounts: ['Query', 'GetItem', 'UpdateItem', 'ConditionCheckItem'],
        ledger: ['PutItem'],
        // The pause: the account's live instances and a power-off of each running one (its job, the instance's
        // update, the upstream's power call); the old meter's index and the move of what it held.
        instances: ['Query', 'BatchGetItem', 'GetItem', 'UpdateItem'],
        jobs: ['GetItem', 'PutItem', 'UpdateItem'],
        counters: ['GetItem', 'UpdateItem'],
        // Auto-recharge: the top-up of its crossing, read again or made.
        topUps: ['GetItem', 'PutItem', 'UpdateItem'],
      },
      startsWorkflows: ['power'],
      upstream: true,
      payments: true,
    },
  },
} as const satisfies Record<string, ScheduleDefinition>;

export type ScheduleName = keyof typeof schedules;
export const scheduleNames = Object.keys(schedules) as ScheduleName[];
