import { tableName, type Platform } from '../../shared/platform';
import { BatchGetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { capacityShardName } from '../../shared/store/counters';
import { CAPACITY_SHARDS } from '../../shared/model/capacity';
import { heldUnits } from '../../shared/model/capacity';
import { instanceSchema } from '../../shared/model/instance';

/** Every capacity counter item (each shard, and a pool's old single item) with a unit in use. */
export async function capacityCounters(deps: Platform): Promise<Record<string, number>> {
  const { Items = [] } = await deps.dynamo.send(new ScanCommand({ TableName: tableName(deps, 'counters'), ConsistentRead: true }));
  return Object.fromEntries(
    Items.filter((item) => String(item.name).startsWith('capacity#') && Number(item.used ?? 0) !== 0).map((item) => [
      String(item.name),
      Number(item.used),
    ]),
  );
}

/** What the counter items must say if nothing drifted: the units the instances on record hold from each, counted from them. */
export async function capacityHeldByInstances(deps: Platform): Promise<Record<string, number>> {
  const { Items = [] } = await deps.dynamo.send(new ScanCommand({ TableName: tableName(deps, 'instances'), ConsistentRead: true }));
  const held: Record<string, number> = {};
  for (const item of Items) {
    for (const { pool, shard } of heldUnits(instanceSchema.parse(item))) {
      const name = capacityShardName(pool, shard);
      held[name] = (held[name] ?? 0) + 1;
    }
  }
  return held;
}

/**
 * The units in use in one pool, named by its old single item (e.g. `capacity#tier#s-1vcpu-2gb`): the sum over its
 * shards and that item.
 */
export async function capacityUsed(deps: Platform, name: string): Promise<number> {
  const names = [name, ...Array.from({ length: CAPACITY_SHARDS }, (_, shard) => `${name}#${shard}`)];
  const { Responses = {} } = await deps.dynamo.send(
    new BatchGetCommand({
      RequestItems: { [tableName(deps, 'counters')]: { Keys: names.map((n) => ({ name: n })), ConsistentRead: true } },
    }),
  );
  return (Responses[tableName(deps, 'counters')] ?? []).reduce((sum, item) => sum + Number(item.used ?? 0), 0);
}

/** The stored `used` and `limit` of each shard of a pool, shard 0 first (null where the item has none). */
export async function capacityShardItems(deps: Platform, name: string): Promise<{ used: number | null; limit: number | null }[]> {
  const names = Array.from({ length: CAPACITY_SHARDS }, (_, shard) => `${name}#${shard}`);
  const { Responses = {} } = await deps.dynamo.send(
    new BatchGetCommand({
      RequestItems: { [tableName(deps, 'counters')]: { Keys: names.map((n) => ({ name: n })), ConsistentRead: true } },
    }),
  );
  const byName = new Map((Responses[tableName(deps, 'counters')] ?? []).map((item) => [String(item.name), item]));
  return names.map((n) => {
    const item = byName.get(n);
    return { used: typeof item?.used === 'number' ? item.used : null, limit: typeof item?.limit === 'number' ? item.limit : null };
  });
}
