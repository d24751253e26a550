import { inFlightShardOf, isInFlight, isSwept, sweepShardOf } from './convergence';
import type { InstanceChanges, Instance } from './instance';

export interface IndexKeys {
  readonly set: Record<string, string>;
  /** Set only where the item has none yet. */
  readonly setIfAbsent: Record<string, string>;
  readonly remove: readonly string[];
}

/**
 * Sparse index keys that follow the item's state, set and removed in the same write as the change: a lifecycle under way keeps it in the in-flight index; an instance with a server is in the fleet sweep's
 * index from the moment it is first recorded with one (as seen then); a deletion takes it out of the account's list.
 */
export function indexKeys(instance: Instance, changes: InstanceChanges, now: string): IndexKeys {
  const after = { ...instance, ...changes };
  const inFlight = isInFlight(after);
  const swept = isSwept(after);
  return {
    set: {
      ...(inFlight ? { inflight_shard: inFlightShardOf(instance.instance_id) } : {}),
      ...(swept ? { sweep_shard: sweepShardOf(instance.instance_id) } : {}),
    },
    setIfAbsent: swept ? { sweep_seen_at: now } : {},
    remove: [
      ...(inFlight ? [] : ['inflight_shard']),
      ...(swept ? [] : ['sweep_shard', 'sweep_seen_at']),
      ...(changes.deleted_at ? ['live_account_id'] : []),
    ],
  };
}
