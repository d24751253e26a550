import { createServerStep } from '../../shared/domain/provisioning';
import { provisionInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/workflow-step';

export const handler = workflowStep(provisionInputSchema, createServerStep);
