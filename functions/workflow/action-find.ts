import { findActionStep } from '../../shared/domain/action-steps';
import { findActionInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/workflow-step';

export const handler = workflowStep(findActionInputSchema, findActionStep);
