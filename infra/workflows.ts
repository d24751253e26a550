import type { FunctionAccess } from './access';

/**
 * The lifecycle state machines. Each ASL file names its Task resources with `${Key}` placeholders; `steps`
 * maps every key to the handler module behind it. The CDK stack substitutes the deployed function ARNs; the
 * local Step Functions endpoint binds the same keys to the same handlers in process.
 */
export interface WorkflowStep {
  readonly entry: string;
  readonly access: FunctionAccess;
}

export interface WorkflowDefinition {
  readonly definitionFile: string;
  /** Environment variable through which functions learn the state machine ARN. */
  readonly envVar: string;
  readonly steps: Readonly<Record<string, WorkflowStep>>;
}

export const workflowNames = ['provision', 'power', 'resize', 'delete'] as const;
export type WorkflowName = (typeof workflowNames)[number];

/** Workflow steps read and settle instances, jobs and capacity, and call the upstream. */
const lifecycleStepAccess: FunctionAccess = {
  tables: { instances: ['GetItem', 'UpdateItem'], jobs: ['UpdateItem'], counters: ['UpdateItem'] },
  upstream: true,
};

const step = (entry: string, access: FunctionAccess = lifecycleStepAccess): WorkflowStep => ({
  entry: `functions/workflow/${entry}.ts`,
  access,
});

export const workflows = {
  provision: {
    definitionFile: 'statemachines/provision.asl.json',
    envVar: 'PROVISION_STATE_MACHINE_ARN',
    steps: {
      // Opens the root password to write it into the server's user data.
      CreateServerFunctionArn: step('provision-create-server', { ...lifecycleStepAccess, secrets: ['open'] }),
      CheckServerFunctionArn: step('provision-check-server'),
      CompensateFunctionArn: step('provision-compensate'),
    },
  },
  power: {
    definitionFile: 'statemachines/power.asl.json',
    envVar: 'POWER_STATE_MACHINE_ARN',
    steps: {
      FindActionFunctionArn: step('action-find'),
      CheckActionFunctionArn: step('action-check'),
      FinishPowerFunctionArn: step('power-finish'),
      FailActionFunctionArn: step('action-fail'),
    },
  },
  resize: {
    definitionFile: 'statemachines/resize.asl.json',
    envVar: 'RESIZE_STATE_MACHINE_ARN',
    steps: {
      FindActionFunctionArn: step('action-find'),
      CheckActionFunctionArn: step('action-check'),
      StartActionFunctionArn: step('action-start'),
      FinishResizeFunctionArn: step('resize-finish'),
      FailActionFunctionArn: step('action-fail'),
    },
  },
  delete: {
    definitionFile: 'statemachines/delete.asl.json',
    envVar: 'DELETE_STATE_MACHINE_ARN',
    steps: {
      StopLifecyclesFunctionArn: step('delete-stop-lifecycles', {
        tables: { jobs: ['Query', 'UpdateItem'] },
        stopsWorkflows: ['provision', 'power', 'resize'],
      }),
      DestroyServersFunctionArn: step('delete-destroy-servers', { upstream: true }),
      FinishDeleteFunctionArn: step('delete-finish'),
      FailDeleteFunctionArn: step('delete-fail', { tables: { jobs: ['UpdateItem'] } }),
    },
  },
} as const satisfies Record<WorkflowName, WorkflowDefinition>;

