/**
 * The workflows, and the environment variable through which functions learn each state machine's ARN: all the
 * runtime knows of them. What each one runs (its ASL file and steps) is the deployment's, in infra/workflows.ts.
 */
/**
 * The lifecycles of an instance: each execution runs one job. In this order the stack builds them, each able to start
 * the ones before it: a provision or resize that ends on a billing-paused account starts a power-off.
 */
export const lifecycleWorkflowNames = ['power', 'resize', 'provision', 'delete'] as const;
export type LifecycleWorkflowName = (typeof lifecycleWorkflowNames)[number];

/** Every workflow. */
export const workflowNames = lifecycleWorkflowNames;
export type WorkflowName = (typeof workflowNames)[number];

export const workflowEnvVars = {
  provision: 'PROVISION_STATE_MACHINE_ARN',
  power: 'POWER_STATE_MACHINE_ARN',
  resize: 'RESIZE_STATE_MACHINE_ARN',
  delete: 'DELETE_STATE_MACHINE_ARN',
} as const satisfies Record<WorkflowName, string>;
