import type { Deps } from '../../shared/domain/deps';
import { reconcileTopUps } from '../../shared/domain/payments';
import { scheduledJob } from '../../shared/entry-points';

export const handler = scheduledJob((deps: Deps) => reconcileTopUps(deps));
