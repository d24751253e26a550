import type * as z from 'zod';
import type { Deps } from './domain/deps';
import { entryHandler } from './wiring/entry';
import { withDeadline, type InvocationClock } from './deadline';
import { InvalidStepInput, issuesOf } from './domain/step-inputs';
import { logger, publishMetrics } from './observability';
import { asStepError } from './transient-errors';

/**
 * Wraps a workflow step: its input is parsed with the step's schema first (a malformed one fails the step as
 * InvalidStepInput, which no Retry repeats), it works to the invocation's deadline, its log lines carry the job and
 * instance ids, its metrics are published when it ends, and errors propagate by name so that the state machine's
 * Retry and Catch can match them: a transient failure of an AWS dependency as DependencyTransientError (which every
 * Retry meant for transient failures names), typed errors under their own names.
 */
export function workflowStep<TSchema extends z.ZodType<{ job_id: string; instance_id: number }>, TOutput>(
  schema: TSchema,
  step: (deps: Deps, input: z.output<TSchema>) => Promise<TOutput>,
) {
  return entryHandler((deps: Deps) => async (event: unknown, context?: InvocationClock): Promise<TOutput> => {
    logger.resetKeys();
    const parsed = schema.safeParse(event);
    if (!parsed.success) {
      const issues = issuesOf(parsed.error);
      logger.error('a workflow step was given an input it cannot take', { issues });
      publishMetrics();
      throw new InvalidStepInput(issues.map(({ path, code }) => `${path}: ${code}`).join('; '));
    }
    const input = parsed.data;
    logger.appendKeys({ job_id: input.job_id, instance_id: input.instance_id });
    try {
      return await step(withDeadline(deps, context), input);
    } catch (error) {
      throw asStepError(error);
    } finally {
      publishMetrics();
    }
  });
}

/** Wraps a scheduled job: it works to the invocation's deadline, and its metrics are published when it ends. */
export function scheduledJob<TOutput>(job: (deps: Deps) => Promise<TOutput>) {
  return entryHandler((deps: Deps) => async (_event?: unknown, context?: InvocationClock): Promise<TOutput> => {
    try {
      return await job(withDeadline(deps, context));
    } finally {
      publishMetrics();
    }
  });
}

/** Wraps a function fed by a stream, a queue or the bus: fresh log keys per invocation, metrics published at its end. */
export function eventConsumer<TEvent, TOutput>(consume: (deps: Deps, event: TEvent) => Promise<TOutput>) {
  return entryHandler((deps: Deps) => async (event: TEvent): Promise<TOutput> => {
    logger.resetKeys();
    try {
      return await consume(deps, event);
    } finally {
      publishMetrics();
    }
  });
}
