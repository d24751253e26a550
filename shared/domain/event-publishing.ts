import type { Deps } from './deps';
import * as z from '../model/zod';
import { logger } from '../observability';
import { changeRecordSchema, eventsFromChange, type EventSourceTable } from './events';
import { issuesOf } from './step-inputs';
import type { ServiceEvent } from '../schemas/events';

const SOURCE_TABLES: readonly EventSourceTable[] = ['instances', 'jobs', 'webhooks', 'accounts'];

/** The table a change stream belongs to, from the stream's ARN (`…:table/<name>/stream/<label>`). */
function sourceTableOfStream(deps: Deps, streamArn: string | undefined): EventSourceTable | undefined {
  const name = /:table\/([^/]+)\/stream\//.exec(streamArn ?? '')?.[1];
  return SOURCE_TABLES.find((table) => deps.config.tableNames[table] === name);
}

/** A batch from one table's stream (as each event source mapping delivers them), published in order. */
export async function publishStreamBatch(deps: Deps, streamArn: string | undefined, records: readonly unknown[]): Promise<number> {
  if (records.length === 0) return 0;
  const table = sourceTableOfStream(deps, streamArn);
  if (!table) throw new Error(`no events are derived from the stream ${streamArn}`);
  return publishChanges(deps, table, records);
}

/**
 * The events of committed changes, in the order the stream gave them. A record that does not parse (nor its images)
 * never will: it is logged and passed over, for held back it would stop every later event.
 */
export function eventsOfChanges(table: EventSourceTable, records: readonly unknown[]): ServiceEvent[] {
  return records.flatMap((record, position) => {
    try {
      return eventsFromChange(table, changeRecordSchema.parse(record));
    } catch (error) {
      if (!(error instanceof z.ZodError)) throw error;
      logger.error('a change record does not parse; no event is made of it', { table, position, issues: issuesOf(error) });
      return [];
    }
  });
}

/**
 * Publishes the events of committed changes. A failure throws, so the caller reads the same records again: events
 * are published at least once, each with its stable id.
 */
export async function publishChanges(deps: Deps, table: EventSourceTable, records: readonly unknown[]): Promise<number> {
  const events = eventsOfChanges(table, records);
  if (events.length > 0) await deps.transports.events.publish(events);
  return events.length;
}
