import { tableName, type Platform } from '../platform';
import { GetCommand, PutCommand, UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import { updatedWhenConditionHolds, whenConditionHolds } from './dynamo-helpers';

/**
 * A server of ours that no instance owns, on its way out: found (and powered off) by the fleet sweep, destroyed once
 * its grace period has passed unless an operator spared it.
 */
const orphanSchema = z.object({
  server_id: z.number().int(),
  /** The instance its tag names, if any. */
  instance_id: z.number().int().nullable(),
  /** When the sweep first found it orphaned: the grace period runs from here. */
  found_at: z.string(),
  /** When a sweep last listed it. */
  seen_at: z.string(),
  /** Set by an operator: never destroyed while spared. */
  spared: z.boolean(),
});
export type Orphan = z.infer<typeof orphanSchema>;

/** The sweep's guard: once tripped, the sweep powers off and destroys nothing until an operator resumes it. */
export interface OrphanGuard {
  readonly halted_at: string | null;
  readonly reason: string | null;
  /** When an operator resumed the sweep, until the next run has acted on what it met, beyond its limits. */
  readonly resumed_at: string | null;
}

/**
 * The orphans waiting and the guard, in one item of the counters table (one read per sweep run, no scan): the guard
 * keeps orphans to a few at a time, far below the item's size limit.
 */
const bookSchema = z.object({
  orphans: z.record(z.string(), orphanSchema).default({}),
  halted_at: z.string().nullable().default(null),
  reason: z.string().nullable().default(null),
  resumed_at: z.string().nullable().default(null),
});

const BOOK_KEY = { name: 'sweep#orphans' };

export async function readOrphanBook(deps: Platform): Promise<{ guard: OrphanGuard; orphans: Map<number, Orphan> }> {
  const { Item } = await deps.dynamo.send(new GetCommand({ TableName: tableName(deps, 'counters'), Key: BOOK_KEY, ConsistentRead: true }));
  const book = bookSchema.parse(Item ?? {});
  return {
    guard: { halted_at: book.halted_at, reason: book.reason, resumed_at: book.resumed_at },
    orphans: new Map(Object.values(book.orphans).map((orphan) => [orphan.server_id, orphan])),
  };
}

/** Creates the book on first use, so that later updates can set paths inside its map. */
async function ensureBook(deps: Platform): Promise<void> {
  await whenConditionHolds(
    deps.dynamo.send(
      new PutCommand({
        TableName: tableName(deps, 'counters'),
        Item: { ...BOOK_KEY, orphans: {}, halted_at: null, reason: null, resumed_at: null },
        ConditionExpression: 'attribute_not_exists(#name)',
        ExpressionAttributeNames: { '#name': 'name' },
      }),
    ),
  );
}

/** One conditional update of an orphan's entry; the entry afterwards, or undefined when the condition failed. */
async function updateEntry(
  deps: Platform,
  serverId: number,
  update: Pick<UpdateCommandInput, 'UpdateExpression' | 'ConditionExpression' | 'ExpressionAttributeValues'>,
): Promise<Orphan | undefined> {
  await ensureBook(deps);
  const item = await updatedWhenConditionHolds(deps, {
    TableName: tableName(deps, 'counters'),
    Key: BOOK_KEY,
    ...update,
    ExpressionAttributeNames: { '#orphans': 'orphans', '#id': String(serverId) },
  });
  return item ? bookSchema.parse(item).orphans[String(serverId)] : undefined;
}

/** Records a server newly found orphaned; false when it was recorded already (another run found it first). */
export async function recordOrphan(deps: Platform, orphan: Omit<Orphan, 'spared'>): Promise<boolean> {
  const entry = await updateEntry(deps, orphan.server_id, {
    UpdateExpression: 'SET #orphans.#id = :orphan',
    ConditionExpression: 'attribute_not_exists(#orphans.#id)',
    ExpressionAttributeValues: { ':orphan': { ...orphan, spared: false } },
  });
  return entry !== undefined;
}

export async function markOrphanSeen(deps: Platform, serverId: number, at: string): Promise<void> {
  await updateEntry(deps, serverId, {
    UpdateExpression: 'SET #orphans.#id.seen_at = :at',
    ConditionExpression: 'attribute_exists(#orphans.#id)',
    ExpressionAttributeValues: { ':at': at },
  });
}

/** Spares a waiting orphan (or lets it go on its way); undefined when no such orphan is waiting. */
export async function spareOrphan(deps: Platform, serverId: number, spared: boolean): Promise<Orphan | undefined> {
  return updateEntry(deps, serverId, {
    UpdateExpression: 'SET #orphans.#id.spared = :spared',
    ConditionExpression: 'attribute_exists(#orphans.#id)',
    ExpressionAttributeValues: { ':spared': spared },
  });
}

/** Forgets an orphan: destroyed, or no longer listed. A spared one is kept unless `evenSpared`. */
export async function removeOrphan(deps: Platform, serverId: number, evenSpared = false): Promise<void> {
  await updateEntry(deps, serverId, {
    UpdateExpression: 'REMOVE #orphans.#id',
    ConditionExpression: evenSpared ? 'attribute_exists(#orphans.#id)' : '#orphans.#id.spared = :no',
    ...(evenSpared ? {} : { ExpressionAttributeValues: { ':no': false } }),
  });
}

export async function setOrphanGuard(deps: Platform, guard: OrphanGuard): Promise<void> {
  await ensureBook(deps);
  await deps.dynamo.send(
    new UpdateCommand({
      TableName: tableName(deps, 'counters'),
      Key: BOOK_KEY,
      UpdateExpression: 'SET #halted_at = :halted_at, #reason = :reason, #resumed_at = :resumed_at',
      ExpressionAttributeNames: { '#halted_at': 'halted_at', '#reason': 'reason', '#resumed_at': 'resumed_at' },
      ExpressionAttributeValues: { ':halted_at': guard.halted_at, ':reason': guard.reason, ':resumed_at': guard.resumed_at },
    }),
  );
}

/** The run that met what the operator's resume let through has acted: the next ones keep to the limits again. */
export async function endOrphanGuardResume(deps: Platform, resumedAt: string): Promise<void> {
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'counters'),
        Key: BOOK_KEY,
        UpdateExpression: 'SET #resumed_at = :null',
        ConditionExpression: '#resumed_at = :resumed_at',
        ExpressionAttributeNames: { '#resumed_at': 'resumed_at' },
        ExpressionAttributeValues: { ':resumed_at': resumedAt, ':null': null },
      }),
    ),
  );
}
