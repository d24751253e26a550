import { stopLifecyclesStep } from '../../shared/domain/delete-steps';
import { deleteStepInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(deleteStepInputSchema, stopLifecyclesStep);
