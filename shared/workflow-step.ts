import { logger } from './observability';

/**
 * Wraps a workflow step: its log lines carry the job and instance ids, and errors propagate by name so that the
 * state machine's Retry and Catch can match them.
 */
export function workflowStep<TInput extends { job_id: string; instance_id: number }, TOutput>(
  step: (input: TInput) => Promise<TOutput>,
) {
  return async (input: TInput): Promise<TOutput> => {
    logger.resetKeys();
    logger.appendKeys({ job_id: input.job_id, instance_id: input.instance_id });
    return step(input);
  };
}
