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

const provisionStepAccess: FunctionAccess = {
  tables: { instances: 'readwrite', jobs: 'readwrite', counters: 'readwrite' },
  upstream: true,
};

export const workflows = {
  provision: {
    definitionFile: 'statemachines/provision.asl.json',
    envVar: 'PROVISION_STATE_MACHINE_ARN',
    steps: {
      CreateServerFunctionArn: { entry: 'functions/workflow/provision-create-server.ts', access: provisionStepAccess },
      CheckServerFunctionArn: { entry: 'functions/workflow/provision-check-server.ts', access: provisionStepAccess },
      CompensateFunctionArn: { entry: 'functions/workflow/provision-compensate.ts', access: provisionStepAccess },
    },
  },
} as const satisfies Record<string, WorkflowDefinition>;

export type WorkflowName = keyof typeof workflows;
export const workflowNames = Object.keys(workflows) as WorkflowName[];
