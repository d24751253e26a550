import type { Deps } from '../../shared/domain/deps';
import { reviewDueAccounts } from '../../shared/domain/billing';
import { scheduledJob } from '../../shared/entry-points';

export const handler = scheduledJob((deps: Deps) => reviewDueAccounts(deps));
