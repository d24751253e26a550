import { tableName, type Platform } from '../platform';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand, UpdateCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import { DependencyTransientError, neverSent, NothingWrittenError } from '../transient-errors';
import { retry, retryPolicies, TRY_AGAIN } from '../retry';
import { chargedPieces, rateChangeOf, segmentsOf, type RateChange } from '../model/billing-segments';
import { settle } from '../model/burn';
import { getAccount, type Account } from './accounts';
import { bookingItems, foldAccountChecks, usageEntry } from './checkpoints';
import type { TransactItem } from './ledger';
import {
  capacityBookkeeping,
  CapacityExhaustedError,
  changedShards,
  heldPools,
  ShardPicker,
  unitsOfOldItems,
  type CapacityPool,
} from '../model/capacity';
import { IN_FLIGHT_SHARDS, inFlightShardOf, isInFlight, isSwept, SWEEP_SHARDS, sweepShardOf } from '../model/convergence';
import { indexKeys, type IndexKeys } from '../model/indexes';
import { instanceSchema, withSecretsLifetime, type InstanceChanges, type Instance } from '../model/instance';
import { instanceStatusSchema, type InstanceStatus } from '../model/instance-status';
import type { Job, JobFinish } from '../model/job';
import { batchGetAll, readAll, rideOutTransient, transactWrite, updatedWhenConditionHolds, whenConditionHolds } from './dynamo-helpers';
import { finishJobUpdate, newJobPut } from './jobs';
import { releaseCapacityItem, reserveCapacityItem } from './counters';
import { commitMarkerPut } from './idempotency';
import { assertRequestStillAuthorized, requestGuardItems, throwIfGuardFailed } from './request-guard';

/** The places in `count` reservations (the first items of a cancelled transaction) whose shard was found full. */
function fullReservations(error: unknown, count: number): number[] {
  if (!(error instanceof TransactionCanceledException)) return [];
  return Array.from({ length: count }, (_, index) => index).filter(
    (index) => error.CancellationReasons?.[index]?.Code === 'ConditionalCheckFailed',
  );
}

/**
 * Writes a new instance and its provision job (and for a keyed create, the marker of its Idempotency-Key), reserving
 * an IPv4 address and a unit of the flavor's tier, all in one transaction: either everything is recorded or nothing is. Each unit comes from a shard of its pool picked at
 * random; a full shard cancels the transaction, which is made again with another, until every shard of a pool was
 * found full (CapacityExhaustedError).
 */
export async function insertInstanceReservingCapacity(deps: Platform, instance: Instance, job: Job): Promise<void> {
  const picker = new ShardPicker(heldPools(instance));
  for (;;) {
    const picked = picker.pick();
    const { shards } = capacityBookkeeping({ ...instance, capacity_held: false, pending_plan: null }, instance, [], picked);
    const recorded = { ...instance, ...shards };
    const items = [
      ...picked.map((unit) => reserveCapacityItem(deps, unit.pool, unit.shard!)),
      {
        Put: {
          TableName: tableName(deps, 'instances'),
          Item: {
            ...storedForm(instanceSchema.parse({ ...recorded, updated_at: recorded.created_at })),
            live_account_id: recorded.account_id,
            ...(isInFlight(recorded) ? { inflight_shard: inFlightShardOf(recorded.instance_id) } : {}),
          },
          ConditionExpression: 'attribute_not_exists(instance_id)',
        },
      },
      newJobPut(deps, job),
      ...(recorded.idempotency_key === undefined
        ? []
        : [commitMarkerPut(deps, recorded.idempotency_key, recorded.instance_id, Math.floor(deps.clock.now().getTime() / 1000))]),
    ];
    try {
      await transactWrite(deps, { TransactItems: [...items, ...requestGuardItems(deps)] });
      return;
    } catch (error) {
      // Earlier rounds were refused for full shards: when this one was never sent, nothing was written.
      if (neverSent(error)) throw new NothingWrittenError('the instance could not be written', { cause: error });
      throwIfGuardFailed(error, items.length);
      const { anyFull, exhausted } = picker.noteFull(fullReservations(error, picked.length), picked);
      if (exhausted) throw new CapacityExhaustedError(exhausted.kind);
      if (!anyFull) throw error;
    }
  }
}

/** The instance as stored, deleted or not (workflows need to see deletions). */
export async function getInstanceItem(deps: Platform, instanceId: number): Promise<Instance | undefined> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'instances'), Key: { instance_id: instanceId }, ConsistentRead: true }),
  );
  return Item ? instanceSchema.parse(Item) : undefined;
}

/** The instances with these ids that exist, read in batches, consistently (deleted ones included). */
export async function getInstanceItems(deps: Platform, instanceIds: readonly number[]): Promise<Instance[]> {
  return batchGetAll(
    deps,
    tableName(deps, 'instances'),
    instanceIds.map((instance_id) => ({ instance_id })),
    instanceSchema,
  );
}

/** The caller's instance, or undefined when it is missing, someone else's, or deleted: all the same 404. */
export async function getOwnedInstance(deps: Platform, instanceId: number, accountId: string): Promise<Instance | undefined> {
  return ownedBy(await getInstanceItem(deps, instanceId), accountId);
}

/** The instance if it is the account's and not deleted: what any route may show or change of it. */
export const ownedBy = (item: Instance | undefined, accountId: string): Instance | undefined =>
  item && item.account_id === accountId && item.deleted_at === null ? item : undefined;

export interface InstancePage {
  /** At most this many instances. */
  readonly limit: number;
  /** Only instances with a greater id (the last id of the previous page). */
  readonly after?: number;
}

const liveKeySchema = z.object({ instance_id: z.number().int() });

/**
 * The account's live instances, by id; all of them, or one page and the last id read when more may follow. The
 * index is sparse (deleted instances leave it) and holds only keys, so the items themselves are read from the table
 * by key, consistently: a deletion or change shows at once, and no index keeps a copy of any instance's data.
 */
export async function listOwnedInstances(deps: Platform, accountId: string): Promise<Instance[]>;
export async function listOwnedInstances(
  deps: Platform,
  accountId: string,
  page: InstancePage,
): Promise<{ items: Instance[]; lastId?: number }>;
export async function listOwnedInstances(deps: Platform, accountId: string, page?: InstancePage) {
  const query = {
    TableName: tableName(deps, 'instances'),
    IndexName: 'live_by_account',
    KeyConditionExpression: 'live_account_id = :account',
    ExpressionAttributeValues: { ':account': accountId },
  };
  const readItems = async (keys: { instance_id: number }[]) =>
    (
      await batchGetAll(
        deps,
        tableName(deps, 'instances'),
        keys.map(({ instance_id }) => ({ instance_id })),
        instanceSchema,
      )
    )
      .filter((item) => item.account_id === accountId && item.deleted_at === null)
      .sort((a, b) => a.instance_id - b.instance_id);
  if (!page) return readItems(await readAll(deps, { kind: 'query', ...query }, liveKeySchema));
  const { Items = [], LastEvaluatedKey } = await deps.dynamo.send(
    new QueryCommand({
      ...query,
      Limit: page.limit,
      ...(page.after === undefined ? {} : { ExclusiveStartKey: { live_account_id: accountId, instance_id: page.after } }),
    }),
  );
  const keys = Items.map((item) => liveKeySchema.parse(item));
  return { items: await readItems(keys), ...(LastEvaluatedKey ? { lastId: keys.at(-1)?.instance_id } : {}) };
}

/** What a filtered list reads of each live instance before it reads the instance itself. */
const listingEntrySchema = z.object({
  instance_id: z.number().int(),
  status: instanceStatusSchema,
  project_name: z.string(),
  labels: z.record(z.string(), z.string()).default({}),
});
export type ListingEntry = z.infer<typeof listingEntrySchema>;

/**
 * The account's live instances whose index entry `matches`, by id: one page of at most `page.limit` (and the last id
 * read when more may follow), or all. The entries (status, name and labels beside the keys) are read from the listing
 * index page by page; only the matching instances are read from the table, by key, consistently, and checked again.
 */
export async function listOwnedInstancesMatching(
  deps: Platform,
  accountId: string,
  matches: (entry: ListingEntry) => boolean,
  page: InstancePage | undefined,
): Promise<{ items: Instance[]; lastId?: number }> {
  const limit = page?.limit ?? Number.POSITIVE_INFINITY;
  const matched: number[] = [];
  let after = page?.after;
  let more = true;
  while (more && matched.length < limit) {
    const { Items = [], LastEvaluatedKey } = await deps.dynamo.send(
      new QueryCommand({
        TableName: tableName(deps, 'instances'),
        IndexName: 'live_listing_by_account',
        KeyConditionExpression: 'live_account_id = :account',
        ExpressionAttributeValues: { ':account': accountId },
        ...(after === undefined ? {} : { ExclusiveStartKey: { live_account_id: accountId, instance_id: after } }),
      }),
    );
    const entries = Items.map((item) => listingEntrySchema.parse(item));
    more = LastEvaluatedKey !== undefined;
    for (const [index, entry] of entries.entries()) {
      after = entry.instance_id;
      if (!matches(entry)) continue;
      matched.push(entry.instance_id);
      if (matched.length === limit) {
        // Stopped inside this page: the entries after this one are still to be read.
        more ||= index < entries.length - 1;
        break;
      }
    }
  }
  const items = (
    await batchGetAll(
      deps,
      tableName(deps, 'instances'),
      matched.map((instance_id) => ({ instance_id })),
      instanceSchema,
    )
  )
    .filter((item) => item.account_id === accountId && item.deleted_at === null && matches(item))
    .sort((a, b) => a.instance_id - b.instance_id);
  return { items, ...(more && after !== undefined ? { lastId: after } : {}) };
}

/** Every instance in one of the statuses, deleted ones included (for the reconciler and the meter). */
export async function scanInstancesByStatus(deps: Platform, statuses: readonly InstanceStatus[]): Promise<Instance[]> {
  const values = Object.fromEntries(statuses.map((status, i) => [`:s${i}`, status]));
  return readAll(
    deps,
    {
      kind: 'scan',
      TableName: tableName(deps, 'instances'),
      FilterExpression: `#status IN (${Object.keys(values).join(', ')})`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: values,
      ConsistentRead: true,
    },
    instanceSchema,
  );
}

/**
 * The instances a sparse sharded index lists (`:shard` in the condition names each shard; its shards are queried at
 * once), read by key, consistently: the index lags the table a moment, so callers judge the items, not the index.
 */
async function instancesInShards(
  deps: Platform,
  indexName: string,
  shards: readonly string[],
  keyCondition: string,
  values: Record<string, unknown> = {},
): Promise<Instance[]> {
  const keys = await Promise.all(
    shards.map((shard) =>
      readAll(
        deps,
        {
          kind: 'query',
          TableName: tableName(deps, 'instances'),
          IndexName: indexName,
          KeyConditionExpression: keyCondition,
          ExpressionAttributeValues: { ':shard': shard, ...values },
        },
        liveKeySchema,
      ),
    ),
  );
  return getInstanceItems(
    deps,
    keys.flat().map(({ instance_id }) => instance_id),
  );
}

/** Every instance with a lifecycle under way, from the sparse in-flight index. */
export async function listInFlightInstances(deps: Platform): Promise<Instance[]> {
  const shards = Array.from({ length: IN_FLIGHT_SHARDS }, (_, n) => inFlightShardOf(n));
  return (await instancesInShards(deps, 'inflight_by_shard', shards, 'inflight_shard = :shard')).filter(isInFlight);
}

/** The instances still metered the old way in one shard of its index, a page at a time (read by key, consistently). */
export async function* listLegacyMetered(deps: Platform, shard: string): AsyncGenerator<Instance[]> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.dynamo.send(
      new QueryCommand({
        TableName: tableName(deps, 'instances'),
        IndexName: 'meter_by_shard',
        KeyConditionExpression: 'meter_shard = :shard',
        ExpressionAttributeValues: { ':shard': shard },
        ExclusiveStartKey: start,
        Limit: 100,
      }),
    );
    const keys = (page.Items ?? []).map((item) => ({ instance_id: z.number().int().parse(item.instance_id) }));
    if (keys.length > 0) yield await batchGetAll(deps, tableName(deps, 'instances'), keys, instanceSchema);
    start = page.LastEvaluatedKey;
  } while (start);
}

/** How often one write settles again on an account's checkpoint that moved meanwhile before it gives the decision back. */
const CHECKPOINT_MOVES_PER_WRITE = 16;

/** The account's checkpoint changed between its read and the write: read it again and settle afresh. */
const checkpointMoved = (error: unknown, from: number, count: number) =>
  error instanceof TransactionCanceledException &&
  (error.CancellationReasons ?? []).slice(from, from + count).some((reason) => reason.Code === 'ConditionalCheckFailed');

/**
 * Moves an instance metered the old way to its account's checkpoint, without charging a piece twice or missing one:
 * what the old meter had not charged (from `metered_until`, each segment at its own rate) is booked under the entry
 * id the old meter would have used, and the open segment joins the account's, billed from now; the instance leaves
 * the old index in the same transaction (its version unmoved). The instance as moved when this call moved it; safe to
 * repeat and to race.
 */
export async function moveToCheckpoint(deps: Platform, read: Instance): Promise<Instance | undefined> {
  let instance: Instance | undefined = read;
  for (let attempt = 0; ; attempt++) {
    // Read again after a refusal: a run of the old meter may have charged a period meanwhile (its entry id is ours).
    if (attempt > 0) instance = await getInstanceItem(deps, read.instance_id);
    if (instance?.meter_shard === undefined) return undefined;
    const account = await getAccount(deps, instance.account_id);
    if (!account) throw new Error(`account ${instance.account_id} of instance ${instance.instance_id} does not exist`);
    const nowMs = deps.clock.now().getTime();
    const nowIso = new Date(nowMs).toISOString();
    const segments = segmentsOf(instance);
    const pieces =
      instance.metered_until === null
        ? []
        : chargedPieces(segments, instance.metered_until, nowMs).map((piece) => ({ ...piece, instance_id: read.instance_id }));
    const open = segments.find((segment) => segment.end === null);
    const key = String(instance.instance_id);
    const burning = open
      ? {
          ...account.burning,
          [key]: {
            start: open.start,
            hourly_micros: open.hourly_micros,
            quarters: open.quarters,
            billed_until: nowIso > open.start ? nowIso : open.start,
          },
        }
      : account.burning;
    const entry =
      pieces.length > 0 ? usageEntry(account.account_id, `meter#${instance.instance_id}#${instance.metered_until}`, pieces, nowIso) : null;
    const booking = bookingItems(deps, account, entry, { burning, delta: entry?.amount ?? 0 }, nowMs);
    try {
      await transactWrite(deps, {
        TransactItems: [
          ...booking,
          {
            Update: {
              TableName: tableName(deps, 'instances'),
              Key: { instance_id: instance.instance_id },
              UpdateExpression: 'SET billing_segments = :segments REMOVE meter_shard',
              ConditionExpression: 'version = :version AND attribute_exists(meter_shard)',
              ExpressionAttributeValues: { ':segments': open ? [open] : [], ':version': instance.version },
            },
          },
        ],
      });
      const { meter_shard: _moved, ...rest } = instance;
      return { ...rest, billing_segments: open ? [open] : [] };
    } catch (error) {
      const reasons = error instanceof TransactionCanceledException ? (error.CancellationReasons ?? []) : [];
      // Moved meanwhile, or changed: whoever changed it moves it.
      if (reasons[booking.length]?.Code === 'ConditionalCheckFailed') return undefined;
      if (checkpointMoved(error, 0, booking.length) && attempt < 8) continue;
      throw error;
    }
  }
}

/**
 * The writes that settle a change of an instance's rate on its account: the closed segment's last piece booked, and
 * the checkpoint moved (the open segments, the settled balance, the next review), on condition that it is still the
 * one read.
 */
async function settlementItems(
  deps: Platform,
  instance: Instance,
  change: RateChange,
  nowMs: number,
  known: Account | undefined,
): Promise<{ items: TransactItem[]; version: number }> {
  const account = known ?? (await getAccount(deps, instance.account_id));
  if (!account) throw new Error(`account ${instance.account_id} of instance ${instance.instance_id} does not exist`);
  const settled = settle(account.burning, instance.instance_id, change);
  const nowIso = new Date(nowMs).toISOString();
  const entry = settled.piece
    ? usageEntry(account.account_id, `meter#${instance.instance_id}#${settled.piece.from}`, [settled.piece], nowIso)
    : null;
  return {
    items: bookingItems(deps, account, entry, { burning: settled.burning, delta: entry?.amount ?? 0 }, nowMs),
    version: account.billing_version,
  };
}

/**
 * Notes that the instance's server was seen upstream (the fleet sweep's mark for this pass); not a state change, so
 * the version stays as it is. Only an instance still in the sweep's index is marked, so a mark never puts back a key
 * that a deletion removed.
 */
export async function recordServerSeen(deps: Platform, instanceId: number, at: string): Promise<void> {
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'instances'),
        Key: { instance_id: instanceId },
        UpdateExpression: `SET seen_at = :at, sweep_seen_at = :at REMOVE ${ABSENCE_ATTRIBUTES}`,
        ConditionExpression: 'attribute_exists(sweep_shard)',
        ExpressionAttributeValues: { ':at': at },
      }),
    ),
  );
}

const ABSENCE_ATTRIBUTES = 'absent_since, absent_last_at, absent_reads';

const absenceEvidenceSchema = instanceSchema.pick({ absent_since: true, absent_last_at: true, absent_reads: true });
export type AbsenceEvidence = z.infer<typeof absenceEvidenceSchema>;

/**
 * Adds one read by id that did not find the instance's server to the evidence kept on it, and answers with the
 * evidence as it now stands (undefined when the instance no longer exists). The version stays: an observation is
 * not a change of state, so no action in flight is refused for it.
 */
export async function recordServerAbsent(deps: Platform, instanceId: number, at: string): Promise<AbsenceEvidence | undefined> {
  const item = await updatedWhenConditionHolds(deps, {
    TableName: tableName(deps, 'instances'),
    Key: { instance_id: instanceId },
    UpdateExpression: 'SET absent_since = if_not_exists(absent_since, :at), absent_last_at = :at ADD absent_reads :one',
    ConditionExpression: 'attribute_exists(instance_id)',
    ExpressionAttributeValues: { ':at': at, ':one': 1 },
  });
  return item ? absenceEvidenceSchema.parse(item) : undefined;
}

/** The server was seen: the evidence of its absence goes. */
export async function clearServerAbsence(deps: Platform, instanceId: number): Promise<void> {
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'instances'),
        Key: { instance_id: instanceId },
        UpdateExpression: `REMOVE ${ABSENCE_ATTRIBUTES}`,
        ConditionExpression: 'attribute_exists(absent_since)',
      }),
    ),
  );
}

/**
 * Instances with a server that the fleet sweep has not seen since `since` (from its sparse index, by shard): at the
 * end of a pass, those whose server the listing did not show.
 */
export async function listUnseenSince(deps: Platform, since: string): Promise<Instance[]> {
  const shards = Array.from({ length: SWEEP_SHARDS }, (_, n) => sweepShardOf(n));
  return (
    await instancesInShards(deps, 'sweep_by_shard', shards, 'sweep_shard = :shard AND sweep_seen_at < :since', { ':since': since })
  ).filter(isSwept);
}

type TransactionCheck = Required<Pick<NonNullable<TransactWriteCommandInput['TransactItems']>[number], 'ConditionCheck'>>;

const NO_INDEX_KEYS: IndexKeys = { set: {}, setIfAbsent: {}, remove: [] };

/**
 * No labels are stored as no attribute (read back as `{}`): an empty map is not written, since change-stream readers
 * do not all decode one.
 */
const hasNoLabels = (key: string, value: unknown) =>
  key === 'labels' && typeof value === 'object' && value !== null && Object.keys(value).length === 0;

/**
 * Labels go to the document client as a Map: it writes a plain object as a map only when the object's `constructor`
 * is Object's, and a label named `constructor` would make the whole write fail.
 */
const asStored = ([key, value]: [string, unknown]): [string, unknown] =>
  key === 'labels' && typeof value === 'object' && value !== null ? [key, new Map(Object.entries(value))] : [key, value];

/** An item to Put, without the attributes that are stored as absent. */
const storedForm = (item: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(item)
      .filter(([key, value]) => !hasNoLabels(key, value))
      .map(asStored),
  );

function setExpression(changes: InstanceChanges, now = new Date().toISOString(), keys = NO_INDEX_KEYS) {
  const all = Object.entries({ ...withSecretsLifetime(changes), ...keys.set, updated_at: now });
  const entries = all.filter(([key, value]) => !hasNoLabels(key, value)).map(asStored);
  const absent = Object.entries(keys.setIfAbsent);
  const assignments = [
    ...entries.map((_, i) => `#f${i} = :v${i}`),
    ...absent.map((_, i) => `#a${i} = if_not_exists(#a${i}, :a${i})`),
    'version = version + :one',
  ];
  const toRemove = [...keys.remove, ...(entries.length < all.length ? ['labels'] : [])];
  const removed = toRemove.length > 0 ? ` REMOVE ${toRemove.join(', ')}` : '';
  return {
    UpdateExpression: `SET ${assignments.join(', ')}${removed}`,
    ExpressionAttributeNames: Object.fromEntries([
      ...entries.map(([key], i) => [`#f${i}`, key]),
      ...absent.map(([key], i) => [`#a${i}`, key]),
    ]),
    ExpressionAttributeValues: {
      ...Object.fromEntries(entries.map(([, value], i) => [`:v${i}`, value])),
      ...Object.fromEntries(absent.map(([, value], i) => [`:a${i}`, value])),
      ':one': 1,
    },
  };
}

/** What a provision records before activation; none of it changes what the instance is billed. */
export type ProvisioningChanges = Pick<InstanceChanges, 'status' | 'vps_id' | 'upstream_id' | 'create_requested_at' | 'ipv4'>;

/**
 * Moves a live instance from one of `from` to the given changes, conditionally, so that two workers can never
 * both win. Returns the updated item, or undefined when the instance was not in one of those states (or deleted).
 * Changes of rate go through `updateInstanceAtVersion`, which needs the read item to close the billing segment.
 */
export async function transitionInstance(
  deps: Platform,
  instanceId: number,
  from: readonly InstanceStatus[],
  changes: ProvisioningChanges,
): Promise<Instance | undefined> {
  const update = setExpression(changes);
  const statusValues = Object.fromEntries(from.map((status, i) => [`:from${i}`, status]));
  let attributes: Record<string, unknown> | undefined;
  const applied = await whenConditionHolds(
    deps.dynamo
      .send(
        new UpdateCommand({
          TableName: tableName(deps, 'instances'),
          Key: { instance_id: instanceId },
          UpdateExpression: update.UpdateExpression,
          ConditionExpression: `#status IN (${Object.keys(statusValues).join(', ')}) AND (attribute_not_exists(deleted_at) OR deleted_at = :null)`,
          ExpressionAttributeNames: { ...update.ExpressionAttributeNames, '#status': 'status' },
          ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ...statusValues, ':null': null },
          ReturnValues: 'ALL_NEW',
        }),
      )
      .then((output) => (attributes = output.Attributes)),
  );
  return applied ? instanceSchema.parse(attributes) : undefined;
}

export interface VersionedUpdate {
  readonly changes: InstanceChanges;
  /** Pools to take a unit from, in the same transaction; a full pool fails it with CapacityExhaustedError. */
  readonly reserve?: readonly CapacityPool[];
  /** Pools to give a unit back to, in the same transaction. */
  readonly release?: readonly CapacityPool[];
  /** A job to record with the change (an accepted action, a delete). */
  readonly job?: Job;
  /** A running job that this change ends, in the same transaction, so no job is left running by a crash. */
  readonly finish?: JobFinish;
  /** Conditions on other items that must still hold (the change is refused, false, when one does not). */
  readonly checks?: readonly TransactionCheck[];
  /**
   * The instance's account as read moments ago (a request's authentication reads it, strongly consistent): a change
   * of rate settles on its checkpoint without reading it again; the version condition refuses it if it moved, and
   * the settlement is then made afresh from a new read.
   */
  readonly account?: Account;
}

/**
 * Moves the units an instance holds of the pools' old single items (recorded before sharding) onto shards, in one
 * transaction per instance: each goes back to its old item and a unit of a shard with room is taken in its place,
 * and the instance records the shard, at the version it was read at (raised, so that a change decided from the
 * older read is refused and decided again). A unit whose pool has no shard with room stays on its old item, where it
 * is still given back. Undefined when the instance changed since it was read (read it again).
 */
export async function moveUnitsToShards(deps: Platform, instance: Instance): Promise<{ moved: number; left: number } | undefined> {
  let units = unitsOfOldItems(instance);
  let left = 0;
  let picker = new ShardPicker(units.map((unit) => unit.pool));
  while (units.length > 0) {
    const picked = picker.pick();
    const fields = Object.fromEntries(units.map((unit, i) => [unit.field, picked[i]!.shard]));
    const items = [
      ...picked.map((unit) => reserveCapacityItem(deps, unit.pool, unit.shard!)),
      ...units.map((unit) => releaseCapacityItem(deps, { pool: unit.pool, shard: null })),
      {
        Update: {
          TableName: tableName(deps, 'instances'),
          Key: { instance_id: instance.instance_id },
          UpdateExpression: `SET ${Object.keys(fields)
            .map((_, i) => `#f${i} = :v${i}`)
            .join(', ')}, version = version + :one`,
          ConditionExpression: 'version = :version',
          ExpressionAttributeNames: Object.fromEntries(Object.keys(fields).map((field, i) => [`#f${i}`, field])),
          ExpressionAttributeValues: {
            ...Object.fromEntries(Object.values(fields).map((shard, i) => [`:v${i}`, shard])),
            ':one': 1,
            ':version': instance.version,
          },
        },
      },
    ];
    try {
      await transactWrite(deps, { TransactItems: items });
      return { moved: units.length, left };
    } catch (error) {
      const { anyFull, exhausted } = picker.noteFull(fullReservations(error, picked.length), picked);
      if (exhausted) {
        // No shard of this pool has room: its unit stays where it is.
        units = units.filter((unit) => unit.pool !== exhausted);
        left += 1;
        picker = new ShardPicker(units.map((unit) => unit.pool));
        continue;
      }
      if (anyFull) continue;
      const reasons = error instanceof TransactionCanceledException ? (error.CancellationReasons ?? []) : [];
      if (reasons[items.length - 1]?.Code === 'ConditionalCheckFailed') return undefined;
      if (reasons.some((reason) => reason.Code === 'ConditionalCheckFailed')) {
        throw new Error(`instance ${instance.instance_id} holds a unit of an old counter item that has none in use: run the audit`, {
          cause: error,
        });
      }
      throw error;
    }
  }
  return { moved: 0, left };
}

/**
 * Applies changes, capacity moves and a new job in one transaction, on condition that the instance is still at
 * the version it was read at: whatever was decided from that read still holds, or nothing is written and the
 * answer is false (read again and decide again). Each released unit goes back to the shard it was taken from; each
 * reserved one comes from a shard picked at random, and another is tried while the picked one is full.
 */
export async function updateInstanceAtVersion(deps: Platform, instance: Instance, update: VersionedUpdate): Promise<boolean> {
  return (await applyAtVersion(deps, instance, update)) !== undefined;
}

/** updateInstanceAtVersion, answering with the changes written (the shard attributes included), or undefined. */
async function applyAtVersion(deps: Platform, read: Instance, update: VersionedUpdate): Promise<InstanceChanges | undefined> {
  // Metered the old way: it moves to its account's checkpoint first (its version unmoved), or was moved by another.
  const instance = read.meter_shard === undefined ? read : await moveToCheckpoint(deps, read);
  if (!instance) return undefined;
  const picker = new ShardPicker(update.reserve ?? []);
  let known = update.account?.account_id === instance.account_id ? update.account : undefined;
  for (let checkpointMoves = 0; ;) {
    const picked = picker.pick();
    const nowMs = deps.clock.now().getTime();
    const now = new Date(nowMs).toISOString();
    const moves = capacityBookkeeping(instance, update.changes, update.release ?? [], picked);
    // A change of rate closes the open billing segment and opens the next in this same write, which books the closed
    // piece and moves the account's checkpoint.
    const rateChange = rateChangeOf(instance, { ...instance, ...update.changes }, now);
    const billing_segments = rateChange && (rateChange.opens ? [rateChange.opens] : []);
    const changes = { ...update.changes, ...changedShards(instance, moves.shards), ...(billing_segments ? { billing_segments } : {}) };
    const expression = setExpression(changes, now, indexKeys(instance, changes, now));
    const settled = rateChange ? await settlementItems(deps, instance, rateChange, nowMs, known) : undefined;
    // A transaction may hold one operation per item: the checks on the account (its standing for the request, its
    // billing pause) become conditions of the settlement's write to it.
    const folded = foldAccountChecks(deps, settled?.items ?? [], instance.account_id, update.checks ?? [], requestGuardItems(deps));
    const settlement = folded.settlement;
    const items = [
      ...picked.map((unit) => reserveCapacityItem(deps, unit.pool, unit.shard!)),
      ...moves.release.map((unit) => releaseCapacityItem(deps, unit)),
      {
        Update: {
          TableName: tableName(deps, 'instances'),
          Key: { instance_id: instance.instance_id },
          ...expression,
          ConditionExpression: 'version = :version',
          ExpressionAttributeValues: { ...expression.ExpressionAttributeValues, ':version': instance.version },
        },
      },
      ...folded.checks,
      ...(update.job ? [newJobPut(deps, update.job)] : []),
      ...(update.finish ? [finishJobUpdate(deps, update.finish)] : []),
    ];
    try {
      await transactWrite(deps, { TransactItems: [...items, ...settlement, ...folded.guard] });
      return changes;
    } catch (error) {
      throwIfGuardFailed(error, items.length + settlement.length);
      const { anyFull, exhausted } = picker.noteFull(fullReservations(error, picked.length), picked);
      if (exhausted) throw new CapacityExhaustedError(exhausted.kind);
      if (anyFull) continue;
      if (error instanceof TransactionCanceledException) {
        const reasons = error.CancellationReasons ?? [];
        const instanceIndex = picked.length + moves.release.length;
        const checked = reasons.slice(instanceIndex, instanceIndex + 1 + folded.checks.length);
        if (checked.some((reason) => reason.Code === 'ConditionalCheckFailed')) return undefined;
        // Another change of the account's rate, or its statement, moved the checkpoint first: settle on the new one.
        if (checkpointMoved(error, items.length, settlement.length)) {
          if (folded.fromChecks || folded.fromGuard) {
            // Unmoved, the checkpoint was not what refused it: a check folded into its write was.
            const current = await getAccount(deps, instance.account_id);
            if (current?.billing_version === settled?.version) {
              if (folded.fromGuard) await assertRequestStillAuthorized(deps);
              return undefined;
            }
          }
          // A hot account: after this many in a row the caller reads the instance again and decides afresh.
          if (++checkpointMoves >= CHECKPOINT_MOVES_PER_WRITE) return undefined;
          known = undefined;
          continue;
        }
        // The job had already ended (a delete cancelled it): the state change stands on its own.
        if (update.finish && reasons[items.length - 1]?.Code === 'ConditionalCheckFailed')
          return applyAtVersion(deps, instance, { ...update, finish: undefined });
      }
      throw error;
    }
  }
}

/**
 * Re-reads and re-applies until the version-conditioned update lands; `decide` sees the fresh item and returns
 * the update to make, or undefined to make none. For workflow steps, which must not give up on a busy instance, nor
 * on a read or write that DynamoDB failed transiently (see rideOutTransient).
 */
export function updateInstanceWithRetry(
  deps: Platform,
  instanceId: number,
  decide: (instance: Instance) => VersionedUpdate | undefined,
): Promise<Instance | undefined> {
  return retry(
    retryPolicies.versionConflict,
    async () => {
      const instance = await rideOutTransient(deps, () => getInstanceItem(deps, instanceId));
      if (!instance) return undefined;
      const update = decide(instance);
      if (!update) return instance;
      const applied = await applyAtVersion(deps, instance, update);
      return applied ? { ...instance, ...applied, version: instance.version + 1 } : TRY_AGAIN;
    },
    {
      exhausted: () => {
        // Contention, not a refusal: the step's Retry tries again later.
        throw new DependencyTransientError(`instance ${instanceId} kept changing; giving up this attempt`);
      },
    },
  );
}
