import { checkServerStep } from '../../shared/domain/provisioning';
import { checkServerInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(checkServerInputSchema, checkServerStep);
