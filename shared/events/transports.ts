import { config } from '../config';
import type { AuthMailQueue, DeliveryQueue, EventSink } from './ports';
import { eventBridgeSink, sqsAuthMailQueue, sqsDeliveryQueue } from './aws-transports';

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
