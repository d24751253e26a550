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
import type { ChangeRecord } from '../../shared/domain/events';

export interface StreamPollerOptions {
  /** DynamoDB Local; unset for the tables of a deployed stack (default credentials). */
  readonly endpoint: string | undefined;
  readonly region?: string;
  /** Physical table names to follow. */
  readonly tables: readonly string[];
  /** Called with each batch of records in stream order; a throw makes the poller read the same batch again. */
  readonly onRecords: (table: string, records: ChangeRecord[]) => Promise<void>;
  /** The pause between reads right after a change; it doubles while nothing changes, up to 8 times as long. */
  readonly intervalMs?: number;
  /** Where a table's stream is read from at start: only changes made from now on (default), or everything kept. */
  readonly from?: 'now' | 'start';
}

export interface StreamPoller {
  stop(): Promise<void>;
}

interface ShardCursor {
  iterator: string | undefined;
  /** The last record handed on, so that a re-opened iterator resumes right after it. */
  lastSequenceNumber: string | undefined;
}

/**
 * Follows DynamoDB Local's change streams (or a deployed stack's, for the operations CLI) as Lambda's event source
 * mapping does on AWS: each shard in order, each
 * batch handed on until it is taken, new shards picked up as they appear.
 */
export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const client = options.endpoint
    ? { endpoint: options.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS }
    : { region: options.region };
  const dynamodb = new DynamoDBClient(client);
  const streams = new DynamoDBStreamsClient(client);
  const intervalMs = options.intervalMs ?? 50;
  const cursors = new Map<string, Map<string, ShardCursor>>();
  const streamArns = new Map<string, string>();
  for (const table of options.tables) {
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: table }));
    if (!Table?.LatestStreamArn) throw new Error(`table ${table} has no stream`);
    streamArns.set(table, Table.LatestStreamArn);
    cursors.set(table, new Map());
  }

  async function openIterator(streamArn: string, shardId: string, cursor: ShardCursor, isNew: boolean): Promise<void> {
    const position = cursor.lastSequenceNumber
      ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER' as const, SequenceNumber: cursor.lastSequenceNumber }
      : { ShardIteratorType: isNew && options.from !== 'start' ? ('LATEST' as const) : ('TRIM_HORIZON' as const) };
    cursor.iterator = (
      await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shardId, ...position }))
    ).ShardIterator;
  }

  async function discoverShards(table: string, atStart: boolean): Promise<void> {
    const streamArn = streamArns.get(table)!;
    const known = cursors.get(table)!;
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    for (const shard of StreamDescription?.Shards ?? []) {
      if (!shard.ShardId || known.has(shard.ShardId)) continue;
      const cursor: ShardCursor = { iterator: undefined, lastSequenceNumber: undefined };
      // Shards that appear later hold only changes made after start: read them from their beginning.
      await openIterator(streamArn, shard.ShardId, cursor, atStart);
      known.set(shard.ShardId, cursor);
    }
  }

  /** Reads one batch; true when it held records. */
  async function pollShard(table: string, shardId: string, cursor: ShardCursor): Promise<boolean> {
    if (!cursor.iterator) return false;
    let output;
    try {
      output = await streams.send(new GetRecordsCommand({ ShardIterator: cursor.iterator }));
    } catch (error) {
      // DynamoDB Local lets iterators lapse (or trims under them); resume right after the last record taken.
      if (!(error instanceof ExpiredIteratorException || error instanceof TrimmedDataAccessException)) throw error;
      await openIterator(streamArns.get(table)!, shardId, cursor, false);
      return false;
    }
    const records: _Record[] = output.Records ?? [];
    if (records.length > 0) {
      await options.onRecords(table, records as ChangeRecord[]);
      cursor.lastSequenceNumber = records.at(-1)?.dynamodb?.SequenceNumber;
    }
    cursor.iterator = output.NextShardIterator;
    return records.length > 0;
  }

  for (const table of options.tables) await discoverShards(table, true);

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
