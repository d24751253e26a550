import { finishPowerStep } from '../../shared/domain/action-steps';
import { finishPowerInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(finishPowerInputSchema, finishPowerStep);
