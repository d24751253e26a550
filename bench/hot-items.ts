import type { Platform } from '../shared/platform';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { newJob } from '../shared/domain/jobs';
import { setCapacityLimit } from '../shared/store/counters';
import { CAPACITY_SHARDS } from '../shared/model/capacity';
import { insertInstanceReservingCapacity } from '../shared/store/instances';
import { type Instance } from '../shared/model/instance';

export interface CreateRate {
  readonly workers: number;
  readonly seconds: number;
  readonly created: number;
  /** Creates that still collided after the store's retries (the client would get a 5xx and try again). */
  readonly gaveUp: number;
  readonly perSecond: number;
  /** The counter items each pool is spread over (absent in results written before the pools were sharded). */
  readonly shards?: number;
}

/** DynamoDB's write throughput of one partition, in write units a second. */
export const PARTITION_WRITE_UNITS_PER_SECOND = 1_000;
/** A transactional write of an item up to 1 KB costs two write units. */
export const TRANSACTIONAL_WRITE_UNITS = 2;
/** The most transactional updates one counter item can take a second, when it has its partition to itself. */
export const SHARD_UPDATES_PER_SECOND = PARTITION_WRITE_UNITS_PER_SECOND / TRANSACTIONAL_WRITE_UNITS;
/** The ceiling of one pool on AWS: each of its shards at its partition's limit (creates a second). */
export const POOL_CREATES_PER_SECOND = SHARD_UPDATES_PER_SECOND * CAPACITY_SHARDS;

/**
 * Creates as fast as `workers` concurrent callers can, for `seconds`: each create is the real transaction (a unit
 * from one shard of the IPv4 pool and one of the tier, picked at random, the instance and its job), so creates
 * collide only when they pick the same shard. Ids are distinct and the pools large, so no shard is ever full and
 * only collisions can refuse a create.
 */
export async function measureCreateRate(
  deps: Platform,
  template: Instance,
  firstId: number,
  workers: number,
  seconds: number,
): Promise<CreateRate> {
  await setCapacityLimit(deps, { kind: 'ipv4' }, 10_000_000);
  await setCapacityLimit(deps, { kind: 'tier', flavor: template.plan.flavor }, 10_000_000);
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
          await insertInstanceReservingCapacity(deps, instance, newJob('provision', instance));
          created += 1;
        } catch (error) {
          if (!(error instanceof TransactionCanceledException)) throw error;
          gaveUp += 1;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return { workers, seconds: elapsed, created, gaveUp, perSecond: created / elapsed, shards: CAPACITY_SHARDS };
}

const oneDecimal = (value: number) => value.toLocaleString('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 });
const whole = (value: number) => value.toLocaleString('en-US', { maximumFractionDigits: 0 });

/** The heading of the hot-items part of the scale section. */
export const HOT_ITEMS_TITLE = `### Hot items: creates a second on the sharded capacity counters`;

/** What the measurement is. */
export const HOT_ITEMS_INTRO = [
  `Every create is one transaction that takes a unit from the IPv4 pool and one from its tier. Each pool is ${CAPACITY_SHARDS} counter items (shards), each with its share of the pool's limit; a create takes its unit from a shard picked at random and tries another only when that one is full, so concurrent creates collide only when they pick the same shard (DynamoDB cancels colliding transactions; the store retries them with jitter, five attempts).`,
  'Instance ids come from per-process blocks of 20 and are not a hot item.',
].join(' ');

/** What the create rates say, and what they cannot say on DynamoDB Local. */
export function createVerdict(creates: readonly CreateRate[]): string {
  const best = Math.max(...creates.map((c) => c.perSecond));
  const single = creates.find((c) => c.workers === 1)?.perSecond ?? best;
  const gaveUp = creates.reduce((sum, c) => sum + c.gaveUp, 0);
  return [
    `Best here: ${oneDecimal(best)} creates a second, against ${oneDecimal(single)} for a single caller, and ${gaveUp} create(s) refused after the retries.`,
    'DynamoDB Local applies transactions one at a time, so this measures its speed on this machine: it can show that sharded creates are correct under concurrency (no unit lost or counted twice, a full pool refused only when every shard is full; the integration tests race for the last units), but not the collisions that sharding spreads out, nor AWS throughput.',
    `On AWS one counter item's ceiling is its partition's ${whole(PARTITION_WRITE_UNITS_PER_SECOND)} write units a second; a transactional update costs ${TRANSACTIONAL_WRITE_UNITS}, so at most ${whole(SHARD_UPDATES_PER_SECOND)} creates a second can touch one shard, and ${CAPACITY_SHARDS} shards put a pool's ceiling at ${whole(POOL_CREATES_PER_SECOND)} creates a second once DynamoDB has placed the shards on partitions of their own (it splits a busy partition between its keys; until then shards may share one, and its limit).`,
    `At the target of 100 creates a second each shard takes about ${oneDecimal(100 / CAPACITY_SHARDS)} a second, a fortieth of its ceiling, so overlapping transactions on one shard (and their cancelled retries) are about ${CAPACITY_SHARDS} times rarer than on a single item; AWS publishes no figure for how often overlapping transactions are cancelled, so the design leaves a wide margin for the target, which only a run on AWS can confirm.`,
  ].join(' ');
}

/** The hot-items part of the scale section, as Markdown lines. */
export function hotItemsSection(creates: readonly CreateRate[]): string[] {
  const row = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [
    HOT_ITEMS_TITLE,
    '',
    HOT_ITEMS_INTRO,
    '',
    row(['concurrent callers', 'creates', 'seconds', 'creates a second', 'gave up after retries']),
    row(['---', '---', '---', '---', '---']),
    ...creates.map((c) => row([c.workers, c.created, oneDecimal(c.seconds), oneDecimal(c.perSecond), c.gaveUp])),
    '',
    createVerdict(creates),
  ];
}
