import type { EventBridgeEvent } from 'aws-lambda';
import { fanOut } from '../../shared/domain/webhook-delivery';
import { eventConsumer } from '../../shared/events/handler';
import { serviceEventSchema } from '../../shared/schemas/events';

/** Each bus event → one queued delivery per subscribed webhook of its account. */
export const handler = eventConsumer(async (event: EventBridgeEvent<string, unknown>) => {
  await fanOut(serviceEventSchema.parse(event.detail));
});
