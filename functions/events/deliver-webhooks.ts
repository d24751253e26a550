import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { deliverWebhook } from '../../shared/domain/webhook-delivery';
import { eventConsumer } from '../../shared/events/handler';
import type { DeliveryMessage } from '../../shared/events/ports';
import { logger } from '../../shared/observability';

/** One attempt per message; a message whose attempt hit our own fault comes back (then dead-letters), the rest are done. */
export const handler = eventConsumer(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      await deliverWebhook(JSON.parse(record.body) as DeliveryMessage);
    } catch (error) {
      logger.error('webhook delivery failed; the message will be retried', { error, message_id: record.messageId });
      failures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures: failures };
});
