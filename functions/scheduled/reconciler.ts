import type { Deps } from '../../shared/domain/deps';
import { reconcile } from '../../shared/domain/reconciler';
import { scheduledJob } from '../../shared/entry-points';

export const handler = scheduledJob((deps: Deps) => reconcile(deps));
