import type { Deps } from '../../shared/domain/deps';
import type { EventBridgeEvent } from 'aws-lambda';
import { fanOut } from '../../shared/domain/webhook-delivery';
import { eventConsumer } from '../../shared/entry-points';
import { serviceEventSchema } from '../../shared/schemas/events';

/** Each bus event → one queued delivery per subscribed webhook of its account. */
export const handler = eventConsumer(async (deps: Deps, event: EventBridgeEvent<string, unknown>) => {
  await fanOut(deps, serviceEventSchema.parse(event.detail));
});
