import { config } from '../config';
import type { ServiceEvent } from '../schemas/events';
import type { AuthMailRequest } from '../schemas/auth';
import { eventBridgeSink, sqsAuthMailQueue, sqsDeliveryQueue } from './aws-transports';

/** Where published events go: the EventBridge bus on AWS, the local runtime's bus on this machine. */
export interface EventSink {
  publish(events: readonly ServiceEvent[]): Promise<void>;
}

/** One webhook delivery to attempt: the event, for one endpoint, and how far its retries have come. */
export interface DeliveryMessage {
  readonly webhook_id: string;
  readonly event: ServiceEvent;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly first_attempt_at: string;
  /** Not to be attempted before this time (SQS can delay a message by 15 minutes at most). */
  readonly not_before: string;
}

/** Webhook deliveries waiting for their attempt: SQS on AWS, an in-process queue locally. */
export interface DeliveryQueue {
  send(message: DeliveryMessage, delayMs: number): Promise<void>;
}

/** Console e-mails waiting to be prepared and sent: SQS on AWS, an in-process queue locally. */
export interface AuthMailQueue {
  send(message: AuthMailRequest): Promise<void>;
}

let localSink: EventSink | undefined;
let localQueue: DeliveryQueue | undefined;
let localAuthMail: AuthMailQueue | undefined;

/** The local runtime puts its own bus in place of EventBridge. */
export function useLocalEventSink(sink: EventSink | undefined): void {
  localSink = sink;
}

/** The local runtime puts its own queue in place of SQS. */
export function useLocalDeliveryQueue(queue: DeliveryQueue | undefined): void {
  localQueue = queue;
}

/** The local runtime puts its own queue in place of the console's mail queue. */
export function useLocalAuthMailQueue(queue: AuthMailQueue | undefined): void {
  localAuthMail = queue;
}

function required<T>(value: T | undefined, what: string): T {
  if (!value) throw new Error(`${what} is not set, and no local stand-in is in place`);
  return value;
}

export function eventSink(): EventSink {
  const busName = config().events.busName;
  return busName ? eventBridgeSink(busName) : required(localSink, 'EVENT_BUS_NAME');
}

export function deliveryQueue(): DeliveryQueue {
  const queueUrl = config().events.deliveryQueueUrl;
  return queueUrl ? sqsDeliveryQueue(queueUrl) : required(localQueue, 'WEBHOOK_QUEUE_URL');
}

export function authMailQueue(): AuthMailQueue {
  const queueUrl = config().console.mailQueueUrl;
  return queueUrl ? sqsAuthMailQueue(queueUrl) : required(localAuthMail, 'AUTH_MAIL_QUEUE_URL');
}
