import { finishResizeStep } from '../../shared/domain/action-steps';
import { finishResizeInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(finishResizeInputSchema, finishResizeStep);
