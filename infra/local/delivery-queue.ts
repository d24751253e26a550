import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DeliveryMessage } from '../../shared/events/ports';
import { writeFileAtomically } from './atomic-file';

/**
 * As SQS does on AWS: a message whose handling failed comes back after a while, a few times, then dead-letters. The
 * waits double (1, 2, 4, 8 s), so that the tries outlast a dependency's outage of several seconds, as AWS's 60 s
 * visibility timeout does, rather than all failing within it.
 */
const REDELIVER_BASE_MS = 1_000;
const MAX_RECEIVES = 5;

/** A message waiting in the queue. */
interface QueuedMessage<M> {
  readonly message: M;
  /** When it is next handed on (epoch ms). */
  readonly due: number;
  /** How many times it has been handed on and failed. */
  readonly receives: number;
}

/**
 * The local stand-in for an SQS queue (webhook deliveries, console e-mails): each message is handed to `deliver`
 * once its delay has passed. Given a directory, it keeps every message there (one file each) until it is delivered
 * or dead-lettered, so that what a stopped runtime left queued is delivered by the next one on the same directory.
 */
export class LocalDeliveryQueue<M = DeliveryMessage> {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly deliver: (message: M) => Promise<void>,
    private readonly directory?: string,
    /** What its messages are, for the log. */
    private readonly what = 'webhook delivery',
  ) {}

  /** Hands on what an earlier runtime left queued in the directory, each at its time (at once when it is past). */
  async resume(): Promise<void> {
    if (!this.directory) return;
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const queued: [string, QueuedMessage<M>][] = [];
    for (const name of await readdir(this.directory)) {
      // Anything else is a write that a stop cut short, for a send that never returned.
      if (!name.endsWith('.json')) await rm(join(this.directory, name), { force: true });
      else
        queued.push([name.slice(0, -'.json'.length), JSON.parse(await readFile(join(this.directory, name), 'utf8')) as QueuedMessage<M>]);
    }
    for (const [id, entry] of queued.sort(([, a], [, b]) => a.due - b.due)) this.schedule(id, entry);
  }

  async send(message: M, delayMs: number): Promise<void> {
    const id = randomUUID();
    const entry: QueuedMessage<M> = { message, due: Date.now() + delayMs, receives: 0 };
    // Kept before the send returns, even while closing: a delivery that fails as the runtime stops queues its retry.
    await this.keep(id, entry);
    this.schedule(id, entry);
  }

  private schedule(id: string, entry: QueuedMessage<M>): void {
    if (this.closed) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        const receive = entry.receives + 1;
        const run = this.deliver(entry.message)
          .then(
            () => this.drop(id),
            async (error: unknown) => {
              if (receive >= MAX_RECEIVES) {
                console.error(`${this.what} dead-lettered after ${receive} tries:`, error);
                await this.drop(id);
                return;
              }
              const next: QueuedMessage<M> = { ...entry, due: Date.now() + REDELIVER_BASE_MS * 2 ** (receive - 1), receives: receive };
              await this.keep(id, next);
              this.schedule(id, next);
            },
          )
          .catch((error: unknown) => console.error('the local delivery queue could not record a delivery:', error));
        this.inFlight.add(run);
        void run.finally(() => this.inFlight.delete(run));
      },
      Math.max(0, entry.due - Date.now()),
    );
    this.timers.add(timer);
  }

  private async keep(id: string, entry: QueuedMessage<M>): Promise<void> {
    if (this.directory) await writeFileAtomically(join(this.directory, `${id}.json`), JSON.stringify(entry));
  }

  private async drop(id: string): Promise<void> {
    if (this.directory) await rm(join(this.directory, `${id}.json`), { force: true });
  }

  /** Resolves once every message sent so far has been handed on and is done with, or has failed for good. */
  async idle(): Promise<void> {
    while (this.timers.size > 0 || this.inFlight.size > 0) {
      await Promise.all(this.inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Stops handing messages on (those kept in the directory stay there) and lets running deliveries end. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.inFlight);
  }
}
