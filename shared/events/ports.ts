import * as z from '../model/zod';
import { serviceEventSchema, type ServiceEvent } from '../schemas/events';
import type { AuthMailRequest } from '../schemas/auth';

/** Where published events go: the EventBridge bus on AWS, the local runtime's bus on this machine. */
export interface EventSink {
  publish(events: readonly ServiceEvent[]): Promise<void>;
}

/** One webhook delivery to attempt: the event, for one endpoint, and how far its retries have come. */
export const deliveryMessageSchema = z.object({
  webhook_id: z.string().min(1),
  event: serviceEventSchema,
  /** 1 for the first attempt. */
  attempt: z.number().int().min(1),
  first_attempt_at: z.iso.datetime({ offset: true }),
  /** Not to be attempted before this time (SQS can delay a message by 15 minutes at most). */
  not_before: z.iso.datetime({ offset: true }),
});
export type DeliveryMessage = z.output<typeof deliveryMessageSchema>;

/** Webhook deliveries waiting for their attempt: SQS on AWS, an in-process queue locally. */
export interface DeliveryQueue {
  send(message: DeliveryMessage, delayMs: number): Promise<void>;
}

/** Console e-mails waiting to be prepared and sent: SQS on AWS, an in-process queue locally. */
export interface AuthMailQueue {
  send(message: AuthMailRequest): Promise<void>;
}

/** Where a runtime hands on what it publishes and queues. */
export interface EventTransports {
  readonly events: EventSink;
  readonly deliveries: DeliveryQueue;
  readonly authMail: AuthMailQueue;
}
