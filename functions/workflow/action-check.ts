import { checkActionStep } from '../../shared/domain/action-steps';
import { checkActionInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(checkActionInputSchema, checkActionStep);
