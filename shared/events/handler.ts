import { logger, publishMetrics } from '../observability';

/** Wraps a function fed by a stream, a queue or the bus: fresh log keys per invocation, metrics published at its end. */
export function eventConsumer<TEvent, TOutput>(consume: (event: TEvent) => Promise<TOutput>) {
  return async (event: TEvent): Promise<TOutput> => {
    logger.resetKeys();
    try {
      return await consume(event);
    } finally {
      publishMetrics();
    }
  };
}
