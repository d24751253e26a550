import { logger, publishMetrics } from './observability';

/**
 * Wraps a workflow step: its log lines carry the job and instance ids, its metrics are published when it ends,
 * and errors propagate by name so that the state machine's Retry and Catch can match them.
 */
export function workflowStep<TInput extends { job_id: string; instance_id: number }, TOutput>(
  step: (input: TInput) => Promise<TOutput>,
) {
  return async (input: TInput): Promise<TOutput> => {
    logger.resetKeys();
    logger.appendKeys({ job_id: input.job_id, instance_id: input.instance_id });
    try {
      return await step(input);
    } finally {
      publishMetrics();
    }
  };
}

/** Wraps a scheduled job: its metrics are published when it ends. */
export function scheduledJob<TOutput>(job: () => Promise<TOutput>) {
  return async (): Promise<TOutput> => {
    try {
      return await job();
    } finally {
      publishMetrics();
    }
  };
}
