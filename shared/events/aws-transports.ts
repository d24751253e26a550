import { runtimeSlot, type Platform } from '../platform';
import { tracer } from '../observability';
import { notBundled } from '../aws';
import type { ServiceEvent } from '../schemas/events';
import { EVENT_SOURCE } from './source';
import type { AuthMailRequest } from '../schemas/auth';
import type { AuthMailQueue, DeliveryMessage, DeliveryQueue, EventSink } from './ports';

/** PutEvents takes at most 10 entries per call. */
const PUT_EVENTS_BATCH = 10;
/** SQS delays a message by 15 minutes at most; longer waits are made of several sends. */
const SQS_MAX_DELAY_SECONDS = 900;

/** Each SDK and the runtime's client, loaded on first use: only functions that publish or queue bundle them. */
const eventBridge = runtimeSlot(async ({ config }) => {
  if (typeof __BUNDLES_EVENTS__ === 'undefined' || __BUNDLES_EVENTS__) {
    const sdk = await import('@aws-sdk/client-eventbridge');
    return { sdk, client: tracer.captureAWSv3Client(new sdk.EventBridgeClient({ region: config.region })) };
  }
  throw notBundled('EventBridge');
});
const sqs = runtimeSlot(async ({ config }) => {
  if (typeof __BUNDLES_QUEUES__ === 'undefined' || __BUNDLES_QUEUES__) {
    const sdk = await import('@aws-sdk/client-sqs');
    return { sdk, client: tracer.captureAWSv3Client(new sdk.SQSClient({ region: config.region })) };
  }
  throw notBundled('SQS');
});

export function eventBridgeSink(deps: Platform, busName: string): EventSink {
  return {
    async publish(events: readonly ServiceEvent[]) {
      const { sdk, client } = await eventBridge.of(deps);
      for (let start = 0; start < events.length; start += PUT_EVENTS_BATCH) {
        const batch = events.slice(start, start + PUT_EVENTS_BATCH);
        const output = await client.send(
          new sdk.PutEventsCommand({
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
  return {
    async send(message: AuthMailRequest) {
      const { sdk, client } = await sqs.of(deps);
      await client.send(new sdk.SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(message) }));
    },
  };
}

export function sqsDeliveryQueue(deps: Platform, queueUrl: string): DeliveryQueue {
  return {
    async send(message: DeliveryMessage, delayMs: number) {
      const { sdk, client } = await sqs.of(deps);
      await client.send(
        new sdk.SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify(message),
          DelaySeconds: Math.min(SQS_MAX_DELAY_SECONDS, Math.max(0, Math.ceil(delayMs / 1000))),
        }),
      );
    },
  };
}
