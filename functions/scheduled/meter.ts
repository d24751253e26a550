import { runMeter } from '../../shared/domain/billing';
import { scheduledJob } from '../../shared/workflow-step';

export const handler = scheduledJob(() => runMeter());
