import { runtimeSlot, type Platform } from '../platform';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { tracer } from '../observability';
import type { ServiceEvent } from '../schemas/events';
import { EVENT_SOURCE } from './source';
import type { AuthMailRequest } from '../schemas/auth';
import type { AuthMailQueue, DeliveryMessage, DeliveryQueue, EventSink } from './ports';

/** PutEvents takes at most 10 entries per call. */
const PUT_EVENTS_BATCH = 10;
/** SQS delays a message by 15 minutes at most; longer waits are made of several sends. */
const SQS_MAX_DELAY_SECONDS = 900;

const eventBridge = runtimeSlot(({ config }) => tracer.captureAWSv3Client(new EventBridgeClient({ region: config.region })));
const sqs = runtimeSlot(({ config }) => tracer.captureAWSv3Client(new SQSClient({ region: config.region })));

export function eventBridgeSink(deps: Platform, busName: string): EventSink {
  const client = eventBridge.of(deps);
  return {
    async publish(events: readonly ServiceEvent[]) {
      for (let start = 0; start < events.length; start += PUT_EVENTS_BATCH) {
        const batch = events.slice(start, start + PUT_EVENTS_BATCH);
        const output = await client.send(
          new PutEventsCommand({
            Entries: batch.map((event) => ({
              EventBusName: busName,
              Source: EVENT_SOURCE,
              DetailType: event.type,
              Detail: JSON.stringify(event),
              Time: new Date(event.time),
            })),
          }),
        );
        // A partly refused batch is failed whole: the stream retries it, and the stable ids let consumers drop repeats.
        if (output.FailedEntryCount) throw new Error(`EventBridge refused ${output.FailedEntryCount} of ${batch.length} events`);
      }
    },
  };
}

export function sqsAuthMailQueue(deps: Platform, queueUrl: string): AuthMailQueue {
  const client = sqs.of(deps);
  return {
    async send(message: AuthMailRequest) {
      await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(message) }));
    },
  };
}

export function sqsDeliveryQueue(deps: Platform, queueUrl: string): DeliveryQueue {
  const client = sqs.of(deps);
  return {
    async send(message: DeliveryMessage, delayMs: number) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify(message),
          DelaySeconds: Math.min(SQS_MAX_DELAY_SECONDS, Math.max(0, Math.ceil(delayMs / 1000))),
        }),
      );
    },
  };
}
