import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo } from '../../shared/aws';
import { tableName } from '../../shared/config';
import { capacityCounterName } from '../../shared/store/counters';
import { heldPools, instanceItemSchema } from '../../shared/store/instances';

/** Every capacity counter with a unit in use. */
export async function capacityCounters(): Promise<Record<string, number>> {
  const { Items = [] } = await dynamo().send(new ScanCommand({ TableName: tableName('counters'), ConsistentRead: true }));
  return Object.fromEntries(
    Items.filter((item) => String(item.name).startsWith('capacity#') && Number(item.used ?? 0) !== 0).map((item) => [
      String(item.name),
      Number(item.used),
    ]),
  );
}

/** What the counters must say if nothing drifted: the units the instances on record hold, counted from them. */
export async function capacityHeldByInstances(): Promise<Record<string, number>> {
  const { Items = [] } = await dynamo().send(new ScanCommand({ TableName: tableName('instances'), ConsistentRead: true }));
  const held: Record<string, number> = {};
  for (const item of Items) {
    for (const pool of heldPools(instanceItemSchema.parse(item))) {
      const name = capacityCounterName(pool);
      held[name] = (held[name] ?? 0) + 1;
    }
  }
  return held;
}

/** The units in use on one capacity counter, e.g. `capacity#tier#s-1vcpu-2gb`. */
export async function capacityUsed(name: string): Promise<number> {
  const { Item } = await dynamo().send(new GetCommand({ TableName: tableName('counters'), Key: { name }, ConsistentRead: true }));
  return (Item?.used as number | undefined) ?? 0;
}
