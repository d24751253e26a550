import type { LifecycleWorkflowName } from '../workflow-names';
import type { Job } from '../model/job';

/** Jobs that run a workflow (a `reconcile` job is recorded already ended). */
export type WorkflowJobType = Exclude<Job['type'], 'reconcile'>;

export const workflowOfJob: Record<WorkflowJobType, LifecycleWorkflowName> = {
  provision: 'provision',
  delete: 'delete',
  power_on: 'power',
  power_off: 'power',
  reboot: 'power',
  resize: 'resize',
};
