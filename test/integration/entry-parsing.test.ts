import type { SQSEvent } from 'aws-lambda';
import { handler as deliverWebhooks } from '../../functions/events/deliver-webhooks';
import { publishChanges } from '../../shared/domain/event-publishing';
import { marshall } from '@aws-sdk/util-dynamodb';
import { startReceiver, eventually } from '../support/receiver';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

describe('non-HTTP entry points', () => {
  it('delivers the good messages of a batch and fails only the malformed one', async () => {
    const receiver = await startReceiver();
    try {
      const { apiKey, accountId } = await runtime.newAccount();
      const created = await runtime.call('POST', '/api/v1/webhooks', { apiKey, body: { url: receiver.url, events: ['job.failed'] } });
      receiver.secret = created.body.secret;
      const now = new Date().toISOString();
      const good = {
        webhook_id: created.body.id,
        event: {
          id: 'evt_entry_parsing_1',
          type: 'job.failed',
          time: now,
          account_id: accountId,
          instance_id: 1,
          sequence: null,
          data: { job_id: 'job-1', job_type: 'provision', error: 'Upstream error' },
        },
        attempt: 1,
        first_attempt_at: now,
        not_before: now,
      };
      const event = {
        Records: [
          { messageId: 'good', body: JSON.stringify(good) },
          { messageId: 'bad', body: JSON.stringify({ ...good, attempt: 'first' }) },
        ],
      } as unknown as SQSEvent;

      const answer = await deliverWebhooks.forRuntime(runtime.deps)(event);

      expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: 'bad' }] });
      await eventually(() => receiver.received.length === 1, 'the good delivery');
      expect(receiver.received[0]!.event.id).toBe('evt_entry_parsing_1');
      expect(receiver.received[0]!.verified).toBe(true);
    } finally {
      await receiver.close();
    }
  });

  it('passes over a change record that does not parse, and publishes the others of its batch', async () => {
    const job = {
      job_id: 'job-entry-1',
      account_id: 'acct_entry',
      instance_id: 9,
      type: 'provision',
      status: 'failed',
      finished_at: '2026-11-25T02:00:00.000Z',
      error: 'Upstream error',
    };
    const valid = {
      eventName: 'MODIFY',
      dynamodb: { OldImage: marshall({ ...job, status: 'running', finished_at: null, error: null }), NewImage: marshall(job) },
    };
    const garbled = { eventName: 'MODIFY', dynamodb: { NewImage: 'not an image' } };
    const badImage = { eventName: 'MODIFY', dynamodb: { NewImage: marshall({ ...job, status: 'exploded' }) } };
    const noDynamoDbValue = { eventName: 'MODIFY', dynamodb: { NewImage: { ...marshall(job), error: { X: 'Upstream error' } } } };

    const published = await publishChanges(runtime.deps, 'jobs', [garbled, valid, badImage, noDynamoDbValue]);

    expect(published).toBe(1);
  });
});
