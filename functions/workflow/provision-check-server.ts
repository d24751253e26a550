import { checkServerStep } from '../../shared/domain/provisioning';
import { workflowStep } from '../../shared/workflow-step';

export const handler = workflowStep(checkServerStep);
