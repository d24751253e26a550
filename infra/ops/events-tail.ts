import type { Platform } from '../../shared/platform';
import type { EventSourceTable } from '../../shared/domain/events';
import { eventsOfChanges } from '../../shared/domain/event-publishing';
import type { ServiceEvent } from '../../shared/schemas/events';
import { startStreamPoller } from '../local/stream-poller';

const SOURCE_TABLES: readonly EventSourceTable[] = ['instances', 'jobs', 'webhooks'];

/** One line per event: time, type, subject and what changed. */
export function eventLine(event: ServiceEvent): string {
  const subject = event.instance_id === null ? event.account_id : `${event.account_id} instance ${event.instance_id}`;
  const detail =
    event.type === 'instance.status_changed'
      ? `${event.data.from} → ${event.data.to} (${event.data.plan.flavor})`
      : 'error' in event.data && event.data.error
        ? event.data.error
        : '';
  return [event.time, event.type, subject, event.sequence === null ? '' : `#${event.sequence}`, detail].filter(Boolean).join('  ');
}

/**
 * Follows the tables' change streams (DynamoDB Local's, or the deployed tables' own) and prints the events they
 * stand for, as the bus receives them, from now on; until `limit` events were printed, or forever.
 */
export async function tailEvents(
  deps: Platform,
  options: {
    accountId?: string;
    limit?: number;
    print: (event: ServiceEvent) => void;
    /** Called once the streams are followed: every change from then on is printed. */
    onReady?: () => void;
  },
): Promise<number> {
  const names = new Map(SOURCE_TABLES.map((table) => [deps.config.tableNames[table], table]));
  let printed = 0;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const poller = await startStreamPoller({
    endpoint: deps.config.dynamodbEndpoint,
    region: deps.config.region,
    tables: [...names.keys()],
    onRecords: async (table, records) => {
      for (const event of eventsOfChanges(names.get(table)!, records)) {
        if (options.accountId !== undefined && event.account_id !== options.accountId) continue;
        if (options.limit !== undefined && printed >= options.limit) break;
        options.print(event);
        printed++;
      }
      if (options.limit !== undefined && printed >= options.limit) finish();
    },
  });
  process.once('SIGINT', finish);
  options.onReady?.();
  await done;
  process.off('SIGINT', finish);
  await poller.stop();
  return printed;
}
