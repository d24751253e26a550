import type { DynamoDBStreamEvent } from 'aws-lambda';
import { publishStreamBatch } from '../../shared/domain/event-publishing';
import { eventConsumer } from '../../shared/events/handler';

/** DynamoDB Streams → the EventBridge bus. A throw makes Lambda retry the batch (bisected), then dead-letter it. */
export const handler = eventConsumer(async (event: DynamoDBStreamEvent) => {
  await publishStreamBatch(event.Records[0]?.eventSourceARN, event.Records);
});
