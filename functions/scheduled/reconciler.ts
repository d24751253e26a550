import { reconcile } from '../../shared/domain/reconciler';
import { scheduledJob } from '../../shared/workflow-step';

export const handler = scheduledJob(() => reconcile());
