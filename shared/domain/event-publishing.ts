import { config } from '../config';
import { eventSink } from '../events/transports';
import { eventsFromChange, type ChangeRecord, type EventSourceTable } from './events';

const SOURCE_TABLES: readonly EventSourceTable[] = ['instances', 'jobs', 'webhooks'];

/** The table a change stream belongs to, from the stream's ARN (`…:table/<name>/stream/<label>`). */
export function sourceTableOfStream(streamArn: string | undefined): EventSourceTable | undefined {
  const name = /:table\/([^/]+)\/stream\//.exec(streamArn ?? '')?.[1];
  return SOURCE_TABLES.find((table) => config().tableNames[table] === name);
}

/** A batch from one table's stream (as each event source mapping delivers them), published in order. */
export async function publishStreamBatch(streamArn: string | undefined, records: readonly ChangeRecord[]): Promise<number> {
  if (records.length === 0) return 0;
  const table = sourceTableOfStream(streamArn);
  if (!table) throw new Error(`no events are derived from the stream ${streamArn}`);
  return publishChanges(table, records);
}

/**
 * Publishes the events of committed changes, in the order the stream gave them. A failure throws, so the caller
 * reads the same records again: events are published at least once, each with its stable id.
 */
export async function publishChanges(table: EventSourceTable, records: readonly ChangeRecord[]): Promise<number> {
  const events = records.flatMap((record) => eventsFromChange(table, record));
  if (events.length > 0) await eventSink().publish(events);
  return events.length;
}
