import { stopLifecyclesStep } from '../../shared/domain/delete-steps';
import { workflowStep } from '../../shared/workflow-step';

export const handler = workflowStep(stopLifecyclesStep);
