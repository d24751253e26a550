import type { DeliveryMessage, DeliveryQueue } from '../../shared/events/transports';

/** As SQS does on AWS: a message whose handling failed comes back after a while, a few times, then dead-letters. */
const REDELIVER_MS = 1_000;
const MAX_RECEIVES = 5;

/**
 * The local stand-in for the webhook delivery queue: each message is handed to `deliver` once its delay has passed.
 */
export class LocalDeliveryQueue implements DeliveryQueue {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly deliver: (message: DeliveryMessage) => Promise<void>) {}

  async send(message: DeliveryMessage, delayMs: number): Promise<void> {
    this.schedule(message, delayMs, 1);
  }

  private schedule(message: DeliveryMessage, delayMs: number, receive: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const run = this.deliver(message).catch((error: unknown) => {
        if (receive >= MAX_RECEIVES) console.error(`webhook delivery dead-lettered after ${receive} tries:`, error);
        else this.schedule(message, REDELIVER_MS, receive + 1);
      });
      this.inFlight.add(run);
      void run.finally(() => this.inFlight.delete(run));
    }, delayMs);
    this.timers.add(timer);
  }

  /** Drops what is still waiting and lets running deliveries end. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.inFlight);
  }
}
