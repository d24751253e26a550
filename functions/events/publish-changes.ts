import type { Deps } from '../../shared/domain/deps';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { publishStreamBatch } from '../../shared/domain/event-publishing';
import { eventConsumer } from '../../shared/entry-points';

/** DynamoDB Streams → the EventBridge bus. A throw makes Lambda retry the batch (bisected), then dead-letter it. */
export const handler = eventConsumer(async (deps: Deps, event: DynamoDBStreamEvent) => {
  await publishStreamBatch(deps, event.Records[0]?.eventSourceARN, event.Records);
});
