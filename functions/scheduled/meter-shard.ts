import type { Deps } from '../../shared/domain/deps';
import * as z from 'zod';
import { meterShard } from '../../shared/domain/billing';
import { withDeadline, type InvocationClock } from '../../shared/deadline';
import { logger, publishMetrics } from '../../shared/observability';
import { asStepError } from '../../shared/transient-errors';
import { entryHandler } from '../../shared/wiring/entry';

/** One iteration of the meter state machine's Map: the shard, the execution's start, and the execution (the lease holder). */
const inputSchema = z.object({
  shard: z.number().int().min(0),
  now: z.iso.datetime({ offset: true }),
  holder: z.string().min(1),
});

export const handler = entryHandler((deps: Deps) => async (event: unknown, context?: InvocationClock) => {
  const input = inputSchema.parse(event);
  logger.resetKeys();
  logger.appendKeys({ meter_shard: input.shard });
  try {
    return await meterShard(withDeadline(deps, context), input.shard, Date.parse(input.now), input.holder);
  } catch (error) {
    // Named as the workflow steps name theirs, for the Map's Retry.
    throw asStepError(error);
  } finally {
    publishMetrics();
  }
});
