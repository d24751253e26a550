import { compensateStep } from '../../shared/domain/provisioning';
import { compensateInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(compensateInputSchema, compensateStep);
