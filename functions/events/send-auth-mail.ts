import type { Deps } from '../../shared/domain/deps';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sendAuthMail } from '../../shared/domain/console-auth';
import { eventConsumer } from '../../shared/entry-points';
import { parseMessage } from '../../shared/events/handler';
import { logger } from '../../shared/observability';
import { authMailRequestSchema } from '../../shared/schemas/auth';

/** One console e-mail per message; one that failed comes back (then dead-letters), the rest are done. */
export const handler = eventConsumer(async (deps: Deps, event: SQSEvent): Promise<SQSBatchResponse> => {
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      await sendAuthMail(deps, parseMessage(authMailRequestSchema, record.body));
    } catch (error) {
      logger.error('a console e-mail failed; the message will be retried', { error, message_id: record.messageId });
      failures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures: failures };
});
