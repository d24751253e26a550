import { startActionStep } from '../../shared/domain/action-steps';
import { startActionInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(startActionInputSchema, startActionStep);
