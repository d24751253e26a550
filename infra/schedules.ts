import type { FunctionAccess } from '../shared/access';
import { lifecycleWorkflowNames, type WorkflowName } from '../shared/workflow-names';

/**
 * Scheduled jobs, shared by the CDK stack (EventBridge Scheduler) and the local runtime (timers): what runs, how
 * often, and what it may touch. A job is a function, or a workflow whose executions the schedule starts.
 */
export type ScheduleDefinition = ScheduledFunctionDefinition | ScheduledWorkflowDefinition;

interface ScheduleTiming {
  readonly everyMinutes: number;
  /** Whether the local runtime also runs it once at start. */
  readonly runAtLocalStart: boolean;
}

export interface ScheduledFunctionDefinition extends ScheduleTiming {
  readonly entry: string;
  readonly access: FunctionAccess;
}

/**
 * EventBridge Scheduler starts an execution of the state machine itself (no function in between), with an empty
 * input; the workflow's steps declare their own access (infra/workflows.ts).
 */
export interface ScheduledWorkflowDefinition extends ScheduleTiming {
  readonly workflow: WorkflowName;
}

export const isScheduledWorkflow = (definition: ScheduleDefinition): definition is ScheduledWorkflowDefinition => 'workflow' in definition;

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
      },
      startsWorkflows: lifecycleWorkflowNames,
      upstream: true,
    },
  },
  topUps: {
    entry: 'functions/scheduled/reconcile-top-ups.ts',
    everyMinutes: 5,
    runAtLocalStart: true,
    // The open top-ups (their sparse index, then the items); a credit or a closure as a webhook would make it, and what
    // a credit leads to (the pause lifted, the runway's review: the live instances, an auto-recharge top-up).
    access: {
      tables: {
        topUps: ['Query', 'BatchGetItem', 'GetItem', 'PutItem', 'UpdateItem'],
        ledger: ['PutItem'],
        accounts: ['GetItem', 'UpdateItem'],
        instances: ['Query', 'BatchGetItem'],
      },
      payments: true,
    },
  },
  meter: {
    // Fans the meter's shards out to parallel workers (statemachines/meter.asl.json). Executions may overlap when one
    // runs past its period: each shard's lease keeps a shard to one execution at a time.
    workflow: 'meter',
    everyMinutes: 5,
    runAtLocalStart: false,
  },
} as const satisfies Record<string, ScheduleDefinition>;

export type ScheduleName = keyof typeof schedules;
/** The jobs that are a function, and those that are a workflow. */
export type FunctionScheduleName = {
  [K in ScheduleName]: (typeof schedules)[K] extends ScheduledFunctionDefinition ? K : never;
}[ScheduleName];
export type WorkflowScheduleName = Exclude<ScheduleName, FunctionScheduleName>;
export const functionScheduleNames = (Object.keys(schedules) as ScheduleName[]).filter(
  (name): name is FunctionScheduleName => !isScheduledWorkflow(schedules[name]),
);
export const workflowScheduleNames = (Object.keys(schedules) as ScheduleName[]).filter((name): name is WorkflowScheduleName =>
  isScheduledWorkflow(schedules[name]),
);
