import type { ServiceEvent } from '../../shared/schemas/events';
import type { EventSink } from '../../shared/events/ports';

export type EventListener = (event: ServiceEvent) => void | Promise<void>;

/**
 * The local stand-in for the EventBridge bus: every published event goes to every listener, in order. A listener's
 * failure is logged and does not stop the others; the publish then fails, so that the change stream hands the batch
 * on again (EventBridge retries a target that failed; dropped here, the event would never reach the webhooks).
 */
export class LocalEventBus implements EventSink {
  private readonly listeners = new Set<EventListener>();

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async publish(events: readonly ServiceEvent[]): Promise<void> {
    let failed: unknown;
    for (const event of events) {
      for (const listener of this.listeners) {
        try {
          await listener(event);
        } catch (error) {
          console.error(`event listener failed on ${event.type} ${event.id}:`, error);
          failed ??= error;
        }
      }
    }
    if (failed !== undefined) throw new Error('an event listener failed; the events are to be published again', { cause: failed });
  }
}
