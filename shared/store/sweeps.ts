import { tableName, type Platform } from '../platform';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import { whenConditionHolds } from './dynamo-helpers';

/** Where the fleet sweep stands in its pass over the upstream's server listing; one item in the counters table. */
const cursorSchema = z.object({
  /** The next listing page to read, from 1. */
  next_page: z.number().int().min(1),
  /** When the pass in progress read its first page; null before the first page of a pass. */
  pass_started_at: z.string().nullable(),
  version: z.number().int(),
});
export type SweepCursor = z.infer<typeof cursorSchema>;

const CURSOR_KEY = { name: 'sweep#fleet' };

export async function getSweepCursor(deps: Platform): Promise<SweepCursor> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'counters'), Key: CURSOR_KEY, ConsistentRead: true }),
  );
  return Item ? cursorSchema.parse(Item) : { next_page: 1, pass_started_at: null, version: 0 };
}

/**
 * Moves the cursor on from the one read; false when another run moved it meanwhile (its position stands: both
 * runs' checks are conditional writes, so reading a page twice only costs the calls).
 */
export async function moveSweepCursor(deps: Platform, read: SweepCursor, next: Omit<SweepCursor, 'version'>): Promise<boolean> {
  return whenConditionHolds(
    deps.dynamo.send(
      new PutCommand({
        TableName: tableName(deps, 'counters'),
        Item: { ...CURSOR_KEY, ...next, version: read.version + 1 },
        ...(read.version === 0
          ? { ConditionExpression: 'attribute_not_exists(#name)', ExpressionAttributeNames: { '#name': 'name' } }
          : { ConditionExpression: 'version = :version', ExpressionAttributeValues: { ':version': read.version } }),
      }),
    ),
  );
}
