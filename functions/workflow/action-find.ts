import { findActionStep } from '../../shared/domain/action-steps';
import { workflowStep } from '../../shared/workflow-step';

export const handler = workflowStep(findActionStep);
