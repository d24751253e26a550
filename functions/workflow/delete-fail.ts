import { failDeleteStep } from '../../shared/domain/delete-steps';
import { failDeleteInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(failDeleteInputSchema, failDeleteStep);
