import { createServerStep } from '../../shared/domain/provisioning';
import { provisionInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(provisionInputSchema, createServerStep);
