import { checkServerStep } from '../../shared/domain/provisioning';
import { checkServerInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/workflow-step';

export const handler = workflowStep(checkServerInputSchema, checkServerStep);
