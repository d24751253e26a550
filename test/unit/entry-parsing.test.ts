import { unitDeps } from '../support/unit-deps';
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { handler as startAction } from '../../functions/workflow/action-start';
import { handler as deliverWebhooks } from '../../functions/events/deliver-webhooks';
import {
  checkServerInputSchema,
  compensateInputSchema,
  finishPowerInputSchema,
  InvalidStepInput,
  provisionInputSchema,
} from '../../shared/domain/step-inputs';
import { MalformedMessageError, parseMessage } from '../../shared/events/handler';
import { deliveryMessageSchema } from '../../shared/events/ports';
import { workflowStep } from '../../shared/entry-points';

const START_TIME = '2026-11-25T02:10:54.123Z';

describe('workflow step inputs', () => {
  it.each([
    ['CreateServer', provisionInputSchema, { instance_id: 7, job_id: 'job-7' }],
    ['CheckServer', checkServerInputSchema, { instance_id: 7, job_id: 'job-7', upstream_id: 501, started_at: START_TIME }],
    ['Compensate', compensateInputSchema, { instance_id: 7, job_id: 'job-7', error: { Error: 'ProvisionTimeoutError', Cause: '{}' } }],
    ['FinishPower', finishPowerInputSchema, { instance_id: 7, job_id: 'job-7', type: 'power_off', paused_by: 'user' }],
  ])('takes what the %s Task passes, and keeps fields a definition adds', (_, schema, input) => {
    expect(schema.parse({ ...input, added_later: true })).toEqual({ ...input, added_later: true });
  });

  it.each([
    ['no job id', { instance_id: 7 }, 'job_id: invalid_type'],
    ['an instance id as text', { instance_id: '7', job_id: 'job-7' }, 'instance_id: invalid_type'],
    [
      'a start time that is no instant',
      { instance_id: 7, job_id: 'job-7', upstream_id: 501, started_at: 'yesterday' },
      'started_at: invalid_format',
    ],
    ['nothing at all', null, '(root): invalid_type'],
  ])('fails the step as InvalidStepInput, before it runs, when given %s', async (_, input, where) => {
    const step = vi.fn(async () => 'ran');
    const wrapped = workflowStep(checkServerInputSchema, step);

    const failure = await wrapped(input).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(InvalidStepInput);
    expect((failure as Error).name).toBe('InvalidStepInput');
    expect((failure as Error).message).toContain(where);
    expect(step).not.toHaveBeenCalled();
  });

  it('names where the input failed, never its values', async () => {
    const failure = await startAction
      .forRuntime(unitDeps())({ instance_id: 7, job_id: 'job-7', type: 'format_disk_of_acct_4f8Kq2' })
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(InvalidStepInput);
    expect((failure as Error).message).toBe('type: invalid_value');
  });
});

describe('queue messages', () => {
  it.each([
    ['a body that is not JSON', '{"webhook_id":', 'the message body is not JSON'],
    ['a message without its event', JSON.stringify({ webhook_id: 'wh_1', attempt: 1 }), 'event: invalid_type'],
    ['an attempt of zero', JSON.stringify({ webhook_id: 'wh_1', attempt: 0 }), 'attempt: too_small'],
  ])('refuses %s as malformed', (_, body, where) => {
    expect(() => parseMessage(deliveryMessageSchema, body)).toThrow(MalformedMessageError);
    expect(() => parseMessage(deliveryMessageSchema, body)).toThrow(where);
  });

  it('fails each malformed message of a batch alone, for SQS to dead-letter', async () => {
    const event = {
      Records: [
        { messageId: 'm-1', body: 'not json' },
        { messageId: 'm-2', body: JSON.stringify({ webhook_id: 'wh_1' }) },
      ],
    } as unknown as SQSEvent;

    await expect(deliverWebhooks.forRuntime(unitDeps())(event)).resolves.toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }, { itemIdentifier: 'm-2' }],
    });
  });
});
