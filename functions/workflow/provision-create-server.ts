import { createServerStep } from '../../shared/domain/provisioning';
import { workflowStep } from '../../shared/workflow-step';

export const handler = workflowStep(createServerStep);
