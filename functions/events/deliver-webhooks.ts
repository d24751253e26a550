import type { Deps } from '../../shared/domain/deps';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { deliverWebhook } from '../../shared/domain/webhook-delivery';
import { eventConsumer } from '../../shared/entry-points';
import { parseMessage } from '../../shared/events/handler';
import { deliveryMessageSchema } from '../../shared/events/ports';
import { logger } from '../../shared/observability';

/**
 * One attempt per message; a message whose attempt hit our own fault comes back (then dead-letters), the rest are
 * done. One that does not parse fails alone and comes back until it dead-letters, where it can be looked at.
 */
export const handler = eventConsumer(async (deps: Deps, event: SQSEvent): Promise<SQSBatchResponse> => {
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      await deliverWebhook(deps, parseMessage(deliveryMessageSchema, record.body));
    } catch (error) {
      logger.error('webhook delivery failed; the message will be retried', { error, message_id: record.messageId });
      failures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures: failures };
});
