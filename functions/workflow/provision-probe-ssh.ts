import { probeSshStep } from '../../shared/domain/provisioning';
import { probeSshInputSchema } from '../../shared/domain/step-inputs';
import { workflowStep } from '../../shared/entry-points';

export const handler = workflowStep(probeSshInputSchema, probeSshStep);
