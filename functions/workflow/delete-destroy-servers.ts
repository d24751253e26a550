import { destroyServersStep } from '../../shared/domain/delete-steps';
import { destroyServersInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(destroyServersInputSchema, destroyServersStep);
