import { readFile } from 'node:fs/promises';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  TrimmedDataAccessException,
  type _Record,
} from '@aws-sdk/client-dynamodb-streams';
import { LOCAL_CREDENTIALS } from '../../shared/aws';
import { streamMapping } from '../stream-mapping';
import { writeFileAtomically } from './atomic-file';

export interface StreamPollerOptions {
  /** DynamoDB Local; unset for the tables of a deployed stack (default credentials). */
  readonly endpoint: string | undefined;
  readonly region?: string;
  /** Physical table names to follow. */
  readonly tables: readonly string[];
  /**
   * Called with each batch of records in stream order, as the stream gave them (to be parsed). A throw makes the
   * poller hand them on again as the event source mapping does (streamMapping): split down to one record, which is
   * retried a few times, then given up on.
   */
  readonly onRecords: (table: string, records: readonly unknown[]) => Promise<void>;
  /** Where a batch given up on is described (the mapping's on-failure destination on AWS); unset, it is only logged. */
  readonly onFailure?: (failure: StreamBatchFailure) => Promise<void>;
  /** The pause before the first retry of a failed record; it doubles with each retry, up to 8 times as long. */
  readonly retryBaseMs?: number;
  /** The pause between reads right after a change; it doubles while nothing changes, up to 8 times as long. */
  readonly intervalMs?: number;
  /** Where a table's stream is read from at start: only changes made from now on (default), or everything kept. */
  readonly from?: 'now' | 'start';
  /**
   * Where the last record handed on from each shard is kept, so that the next start resumes right after it and changes
   * made while nothing followed the streams are handed on too. Unset: the position lives in memory only.
   */
  readonly checkpointFile?: string;
}

export interface StreamPoller {
  stop(): Promise<void>;
}

/** A batch given up on: where it lies in its stream, as Lambda describes one to the mapping's on-failure destination. */
export interface StreamBatchFailure {
  readonly table: string;
  readonly shardId: string;
  readonly startSequenceNumber: string | undefined;
  readonly endSequenceNumber: string | undefined;
  readonly batchSize: number;
  /** How many times it was handed on. */
  readonly attempts: number;
  /** What the last attempt failed with. */
  readonly error: string;
}

interface ShardCursor {
  iterator: string | undefined;
  /** The last record taken (or given up on), so that a re-opened iterator resumes right after it. */
  lastSequenceNumber: string | undefined;
  /** Records read and not yet taken, in stream order, in the batches that failed batches were split into. */
  pending: _Record[][];
  /** Failed attempts of the first pending batch. */
  failures: number;
  /** When the first pending batch is handed on again (epoch ms). */
  retryAt: number;
}

/** Per table followed: its stream, and the sequence number of the last record handed on from each of its shards. */
type Checkpoint = Record<string, { stream: string; shards: Record<string, string> }>;

async function readCheckpoint(file: string): Promise<Checkpoint> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Checkpoint;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
}

/**
 * Follows DynamoDB Local's change streams (or a deployed stack's, for the operations CLI) as Lambda's event source
 * mapping does on AWS: each shard in order, each
 * batch handed on until it is taken, new shards picked up as they appear; with a checkpoint file, from where the last
 * run left off.
 */
export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const client = options.endpoint
    ? { endpoint: options.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS }
    : { region: options.region };
  const dynamodb = new DynamoDBClient(client);
  const streams = new DynamoDBStreamsClient(client);
  const intervalMs = options.intervalMs ?? 50;
  // As the local delivery queue waits (1, 2, 4, 8 s): the retries outlast a dependency's outage of several seconds.
  const retryBaseMs = options.retryBaseMs ?? 1_000;
  const cursors = new Map<string, Map<string, ShardCursor>>();
  const streamArns = new Map<string, string>();
  for (const table of options.tables) {
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: table }));
    if (!Table?.LatestStreamArn) throw new Error(`table ${table} has no stream`);
    streamArns.set(table, Table.LatestStreamArn);
    cursors.set(table, new Map());
  }
  const saved = options.checkpointFile ? await readCheckpoint(options.checkpointFile) : {};
  // A table made again since has a new stream, none of whose shards were read.
  const savedShards = (table: string) => {
    const entry = saved[table];
    return entry && entry.stream === streamArns.get(table) ? entry.shards : {};
  };

  async function saveCheckpoint(file: string): Promise<void> {
    const checkpoint: Checkpoint = {};
    for (const [table, shards] of cursors) {
      const positions: Record<string, string> = {};
      for (const [shardId, cursor] of shards) if (cursor.lastSequenceNumber) positions[shardId] = cursor.lastSequenceNumber;
      checkpoint[table] = { stream: streamArns.get(table)!, shards: positions };
    }
    await writeFileAtomically(file, JSON.stringify(checkpoint));
  }

  async function openIterator(streamArn: string, shardId: string, cursor: ShardCursor, isNew: boolean): Promise<void> {
    const position = cursor.lastSequenceNumber
      ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER' as const, SequenceNumber: cursor.lastSequenceNumber }
      : { ShardIteratorType: isNew && options.from !== 'start' ? ('LATEST' as const) : ('TRIM_HORIZON' as const) };
    try {
      cursor.iterator = (
        await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shardId, ...position }))
      ).ShardIterator;
    } catch (error) {
      // Records are kept 24 hours: when those after the last one taken are gone, what is left is all there is to read.
      if (!(error instanceof TrimmedDataAccessException && cursor.lastSequenceNumber)) throw error;
      cursor.iterator = (
        await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' }))
      ).ShardIterator;
    }
  }

  async function discoverShards(table: string, atStart: boolean): Promise<void> {
    const streamArn = streamArns.get(table)!;
    const known = cursors.get(table)!;
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    for (const shard of StreamDescription?.Shards ?? []) {
      if (!shard.ShardId || known.has(shard.ShardId)) continue;
      const cursor: ShardCursor = {
        iterator: undefined,
        lastSequenceNumber: savedShards(table)[shard.ShardId],
        pending: [],
        failures: 0,
        retryAt: 0,
      };
      // Shards that appear later hold only changes made after start, and an earlier run followed every shard of a
      // table it knew: read those from their beginning.
      await openIterator(streamArn, shard.ShardId, cursor, atStart && !(table in saved));
      known.set(shard.ShardId, cursor);
    }
  }

  /** Reads one batch when none is pending, and hands pending ones on; true when records were read or taken. */
  async function pollShard(table: string, shardId: string, cursor: ShardCursor): Promise<boolean> {
    if (cursor.pending.length === 0) {
      if (!cursor.iterator) return false;
      let output;
      try {
        output = await streams.send(new GetRecordsCommand({ ShardIterator: cursor.iterator, Limit: streamMapping.batchSize }));
      } catch (error) {
        // DynamoDB Local lets iterators lapse (or trims under them); resume right after the last record taken.
        if (!(error instanceof ExpiredIteratorException || error instanceof TrimmedDataAccessException)) throw error;
        await openIterator(streamArns.get(table)!, shardId, cursor, false);
        return false;
      }
      cursor.iterator = output.NextShardIterator;
      if (!output.Records?.length) return false;
      cursor.pending = [output.Records];
    }
    return handOnPending(table, shardId, cursor);
  }

  /**
   * Hands the pending batches on in order while they are taken. A failed batch is split in two, down to one record,
   * which is retried after a pause, and given up on after the mapping's retries: no record holds its shard for good.
   */
  async function handOnPending(table: string, shardId: string, cursor: ShardCursor): Promise<boolean> {
    let taken = false;
    while (cursor.pending.length > 0 && Date.now() >= cursor.retryAt && !stopped) {
      const batch = cursor.pending[0]!;
      try {
        await options.onRecords(table, batch);
      } catch (error) {
        if (batch.length > 1) {
          const half = Math.ceil(batch.length / 2);
          cursor.pending.splice(0, 1, batch.slice(0, half), batch.slice(half));
          continue;
        }
        cursor.failures++;
        if (cursor.failures <= streamMapping.retryAttempts) {
          console.error(`a record of the change stream of ${table} failed (attempt ${cursor.failures}); retrying:`, messageOf(error));
          cursor.retryAt = Date.now() + retryBaseMs * 2 ** Math.min(cursor.failures - 1, 3);
          return taken;
        }
        await giveUp(table, shardId, batch, cursor.failures, error);
      }
      cursor.pending.shift();
      cursor.failures = 0;
      cursor.retryAt = 0;
      cursor.lastSequenceNumber = batch.at(-1)?.dynamodb?.SequenceNumber;
      // Only once the batch is taken: a stop before this hands it on again (at least once, as Lambda does on AWS).
      if (options.checkpointFile) await saveCheckpoint(options.checkpointFile);
      taken = true;
    }
    return taken;
  }

  async function giveUp(table: string, shardId: string, batch: _Record[], attempts: number, error: unknown): Promise<void> {
    const failure: StreamBatchFailure = {
      table,
      shardId,
      startSequenceNumber: batch[0]?.dynamodb?.SequenceNumber,
      endSequenceNumber: batch.at(-1)?.dynamodb?.SequenceNumber,
      batchSize: batch.length,
      attempts,
      error: messageOf(error),
    };
    console.error(`change stream records given up on after ${attempts} attempts:`, failure);
    await options.onFailure?.(failure);
  }

  for (const table of options.tables) await discoverShards(table, true);
  // Every table followed from now on is known as such, so that the next start reads its new shards from their start.
  if (options.checkpointFile) await saveCheckpoint(options.checkpointFile);

  let stopped = false;
  let cycle = 0;
  let pauseMs = intervalMs;
  const loop = (async () => {
    while (!stopped) {
      cycle++;
      let changed = false;
      for (const table of options.tables) {
        try {
          // A shard can close and be followed by children; look for new ones now and then, and every time while a new
          // table has none yet (DynamoDB Local opens the first with the first write).
          if (cycle % 50 === 0 || cursors.get(table)!.size === 0) await discoverShards(table, false);
          for (const [shardId, cursor] of cursors.get(table)!) changed = (await pollShard(table, shardId, cursor)) || changed;
        } catch (error) {
          if (!stopped) console.error(`reading the change stream of ${table} failed; retrying:`, error);
        }
      }
      // Quick after a change (more usually follow), slower while idle, so that idle runtimes cost little.
      pauseMs = changed ? intervalMs : Math.min(pauseMs * 2, intervalMs * 8);
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  })();

  return {
    async stop() {
      stopped = true;
      await loop;
      dynamodb.destroy();
      streams.destroy();
    },
  };
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
