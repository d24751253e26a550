import { checkpointAccess, mergeAccess, type FunctionAccess } from '../shared/access';
import type { WorkflowName } from '../shared/workflow-names';

/**
 * The lifecycle state machines. Each ASL file names its Task resources with `${Key}` placeholders; `steps`
 * maps every key to the handler module behind it. The CDK stack substitutes the deployed function ARNs; the
 * local Step Functions endpoint binds the same keys to the same handlers in process. The workflows' names and ARN
 * variables are in shared/workflow-names.ts, which the functions read.
 */
export interface WorkflowStep {
  readonly entry: string;
  readonly access: FunctionAccess;
  /** The function's timeout, sized from its worst case. @default DEFAULT_STEP_TIMEOUT_SECONDS */
  readonly timeoutSeconds?: number;
}

/**
 * A step makes at most two upstream calls of 10 s each, plus DynamoDB and a cold token read. A call that could
 * not end before the timeout is not started: the step fails with UpstreamTransientError and its Retry runs it again.
 */
export const DEFAULT_STEP_TIMEOUT_SECONDS = 30;

export interface WorkflowDefinition {
  readonly definitionFile: string;
  /** The execution timeout the ASL file's top-level TimeoutSeconds sets; a test holds the two equal. */
  readonly timeoutSeconds: number;
  readonly steps: Readonly<Record<string, WorkflowStep>>;
}

/**
 * Workflow steps read and settle instances, jobs and capacity, and call the upstream; a server the upstream does not
 * find is judged under the sweep's guard (an item of the counters table).
 */
const lifecycleStepAccess: FunctionAccess = mergeAccess(
  { tables: { instances: ['GetItem', 'UpdateItem'], jobs: ['UpdateItem'], counters: ['GetItem', 'UpdateItem'] }, upstream: true },
  // A change of rate (activation, power, resize, deletion, a server lost) settles on the account's checkpoint.
  checkpointAccess,
);

/**
 * Steps that make an instance running hold the billing pause: they read the account and, when it is paused, power
 * the instance off (a job and its workflow, a transaction checking the account is still paused, the upstream call).
 */
const runningStepAccess: FunctionAccess = mergeAccess(lifecycleStepAccess, {
  tables: { accounts: ['GetItem', 'ConditionCheckItem'], jobs: ['GetItem', 'PutItem', 'UpdateItem'] },
  startsWorkflows: ['power'],
});

/** Action steps also read their job: when it began bounds which upstream actions are the job's. */
const actionStepAccess: FunctionAccess = mergeAccess(lifecycleStepAccess, { tables: { jobs: ['GetItem', 'UpdateItem'] } });

const step = (entry: string, access: FunctionAccess = lifecycleStepAccess, timeoutSeconds?: number): WorkflowStep => ({
  entry: `functions/workflow/${entry}.ts`,
  access,
  timeoutSeconds,
});

export const workflows = {
  provision: {
    definitionFile: 'statemachines/provision.asl.json',
    // Well past the service's provisioning timeout (10 minutes), after which the steps compensate themselves.
    timeoutSeconds: 1800,
    steps: {
      // Opens the root password to write it into the server's user data.
      CreateServerFunctionArn: step('provision-create-server', { ...lifecycleStepAccess, secrets: ['open'] }),
      CheckServerFunctionArn: step('provision-check-server', runningStepAccess),
      // Connects to the server's SSH port (a TCP probe, no upstream call) and activates the instance once it answers.
      ProbeSshFunctionArn: step('provision-probe-ssh', runningStepAccess),
      CompensateFunctionArn: step('provision-compensate'),
    },
  },
  power: {
    definitionFile: 'statemachines/power.asl.json',
    // Each upstream action has its own 15-minute budget inside the steps; this only stops a run that hangs.
    timeoutSeconds: 3600,
    steps: {
      FindActionFunctionArn: step('action-find', actionStepAccess),
      CheckActionFunctionArn: step('action-check'),
      // A power-on finishing on a paused account starts the power-off in the same execution (no new workflow).
      FinishPowerFunctionArn: step(
        'power-finish',
        mergeAccess(actionStepAccess, { tables: { accounts: ['GetItem', 'ConditionCheckItem'] } }),
      ),
      FailActionFunctionArn: step('action-fail', actionStepAccess),
    },
  },
  resize: {
    definitionFile: 'statemachines/resize.asl.json',
    timeoutSeconds: 3600,
    steps: {
      FindActionFunctionArn: step('action-find', actionStepAccess),
      CheckActionFunctionArn: step('action-check'),
      StartActionFunctionArn: step('action-start', actionStepAccess),
      FinishResizeFunctionArn: step('resize-finish', runningStepAccess),
      FailActionFunctionArn: step('action-fail', actionStepAccess),
    },
  },
  delete: {
    definitionFile: 'statemachines/delete.asl.json',
    timeoutSeconds: 3600,
    steps: {
      StopLifecyclesFunctionArn: step('delete-stop-lifecycles', {
        tables: { jobs: ['Query', 'UpdateItem'] },
        stopsWorkflows: ['provision', 'power', 'resize'],
      }),
      // A listing, one delete per server and a second listing, 10 s each: 60 s covers three servers; with more,
      // the deletes that would not finish are not started and the step's Retry carries on where it stopped. The
      // recorded server is read by id, and each read that misses it is kept on the instance as evidence of absence.
      DestroyServersFunctionArn: step('delete-destroy-servers', { upstream: true, tables: { instances: ['GetItem', 'UpdateItem'] } }, 60),
      FinishDeleteFunctionArn: step('delete-finish'),
      FailDeleteFunctionArn: step('delete-fail', { tables: { jobs: ['UpdateItem'] } }),
    },
  },
} as const satisfies Record<WorkflowName, WorkflowDefinition>;
