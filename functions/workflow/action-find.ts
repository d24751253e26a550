import { findActionStep } from '../../shared/domain/action-steps';
import { findActionInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(findActionInputSchema, findActionStep);
