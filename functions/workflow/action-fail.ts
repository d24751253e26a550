import { failActionStep } from '../../shared/domain/action-steps';
import { failActionInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(failActionInputSchema, failActionStep);
