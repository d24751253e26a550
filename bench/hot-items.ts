import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { newJob } from '../shared/domain/jobs';
import { setCapacityLimit } from '../shared/store/counters';
import { insertInstanceReservingCapacity, type InstanceItem } from '../shared/store/instances';

export interface CreateRate {
  readonly workers: number;
  readonly seconds: number;
  readonly created: number;
  /** Creates that still collided after the store's retries (the client would get a 5xx and try again). */
  readonly gaveUp: number;
  readonly perSecond: number;
}

/**
 * Creates as fast as `workers` concurrent callers can, for `seconds`: each create is the real transaction (the IPv4
 * pool and one tier's counter, both single items, the instance and its job), so every create collides with the
 * others on the two counters. Ids are distinct and the pools large, so only collisions can refuse one.
 */
export async function measureCreateRate(template: InstanceItem, firstId: number, workers: number, seconds: number): Promise<CreateRate> {
  await setCapacityLimit({ kind: 'ipv4' }, 10_000_000);
  await setCapacityLimit({ kind: 'tier', flavor: template.plan.flavor }, 10_000_000);
  let nextId = firstId;
  let created = 0;
  let gaveUp = 0;
  const until = Date.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (Date.now() < until) {
        const instance = { ...template, instance_id: nextId++ };
        try {
          await insertInstanceReservingCapacity(instance, newJob('provision', instance));
          created += 1;
        } catch (error) {
          if (!(error instanceof TransactionCanceledException)) throw error;
          gaveUp += 1;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return { workers, seconds: elapsed, created, gaveUp, perSecond: created / elapsed };
}
