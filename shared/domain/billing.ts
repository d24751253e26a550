import type { Deps } from './deps';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import { getAccount, setBillingPaused, type Account } from '../store/accounts';
import { getInstanceItem, leaveMeterIndex, listInstancesToMeter, listOwnedInstances } from '../store/instances';
import { type Instance } from '../model/instance';
import { recordLedgerEntry, recordMeteredPeriod, recordMeteredPeriodKeepingCredit } from '../store/ledger';
import { releaseMeterLease, takeMeterLease } from '../store/meter-leases';
import { chargedPieces, hasUnbilledTime, METER_SHARDS, meterShardOf, segmentsOf, type BillingSegment } from '../model/billing-segments';
import { powerOffForBilling } from './lifecycle';
import { reviewFunding } from './funding';
import { retry, retryPolicies, TRY_AGAIN, type TryAgain } from '../retry';

/** The meter charges in five-minute periods, aligned to the clock, so every run agrees on period boundaries. */
export const METER_PERIOD_MS = 5 * 60_000;

async function requireAccount(deps: Deps, accountId: string): Promise<Account> {
  const account = await getAccount(deps, accountId);
  if (!account) throw new Error(`account ${accountId} does not exist`);
  return account;
}

/** Credits a deposit; a balance brought above zero lifts a billing pause (instances stay off until powered on). */
export async function deposit(
  deps: Deps,
  accountId: string,
  amountMicros: number,
  entryId = `deposit#${deps.ids.uuid()}`,
): Promise<Account> {
  if (!Number.isSafeInteger(amountMicros) || amountMicros <= 0) throw new Error('a deposit is a positive amount');
  await recordLedgerEntry(deps, {
    account_id: accountId,
    entry_id: entryId,
    kind: 'deposit',
    amount: amountMicros,
    description: 'Deposit by an operator',
    created_at: deps.clock.now().toISOString(),
  });
  // Conditional on the balance being above zero now, so it needs no read first.
  if (await setBillingPaused(deps, accountId, false)) logger.info('billing pause lifted', { account_id: accountId });
  return requireAccount(deps, accountId);
}

/** A manual debit (operators); it applies the billing pause exactly as the meter does. */
export async function charge(deps: Deps, accountId: string, amountMicros: number, description: string): Promise<Account> {
  if (!Number.isSafeInteger(amountMicros) || amountMicros <= 0) throw new Error('a charge is a positive amount');
  await recordLedgerEntry(deps, {
    account_id: accountId,
    entry_id: `charge#${deps.ids.uuid()}`,
    kind: 'charge',
    amount: -amountMicros,
    description,
    created_at: deps.clock.now().toISOString(),
  });
  return applyBillingPause(deps, accountId);
}

/**
 * At a balance of zero or below the account is billing-paused and its running instances are powered off by the
 * system. Safe to repeat: an instance busy or refused now is powered off on a later run.
 */
export async function applyBillingPause(deps: Deps, accountId: string): Promise<Account> {
  if (await setBillingPaused(deps, accountId, true)) {
    logger.warn('account billing-paused', { account_id: accountId });
    countMetric(metricNames.billingPauses);
  }
  // Decide on a fresh read: a deposit that landed meanwhile keeps the servers running.
  const account = await requireAccount(deps, accountId);
  if (!account.billing_paused) return account;
  const running = (await listOwnedInstances(deps, accountId)).filter((i) => i.status === 'active' && i.active_job_id === null);
  await Promise.all(running.map((instance) => powerOffForBilling(deps, instance)));
  return account;
}

/**
 * The billing pause holds for work that finishes during it: a step that has just made an instance running (a
 * provision, a resize or a power-on finishing) calls this, and a running instance of a paused account is powered
 * off by the system there and then. Safe to repeat; the power-off is recorded only while the account is still paused.
 */
export async function holdBillingPause(deps: Deps, instanceId: number): Promise<void> {
  const instance = await getInstanceItem(deps, instanceId);
  if (!instance || instance.deleted_at !== null || instance.status !== 'active' || instance.active_job_id !== null) return;
  const account = await getAccount(deps, instance.account_id);
  if (!account?.billing_paused) return;
  logger.warn('the instance became running on a billing-paused account; powering it off', { instance_id: instanceId });
  await powerOffForBilling(deps, instance);
}

export interface MeterReport {
  readonly periodsCharged: number;
  readonly amountCharged: number;
  readonly accountsBilled: number;
}

/**
 * The end of what can be charged now: the last aligned period boundary while a segment is open; once billing has
 * ended (deleted, or the server lost), the end of the last segment.
 */
function chargeableUntil(segments: readonly BillingSegment[], nowMs: number): number {
  const boundary = nowMs - (nowMs % METER_PERIOD_MS);
  const last = segments.at(-1);
  if (!last || last.end === null) return boundary;
  return Math.min(Date.parse(last.end), nowMs);
}

/** A charge booked: its amount, and whether it (or one before it) took the account's balance to zero or below. */
interface Charged {
  readonly amount: number;
  readonly exhausted: boolean;
}

/**
 * Charges one instance up to now, each segment at its own rate; undefined when nothing was due. The charge is booked
 * on condition that the balance stays above zero; when that alone refuses it, it is booked anyway and reported as
 * exhausting the balance (`outOfCredit`: the account is known to be out already, so book it at once).
 */
async function meterInstance(deps: Deps, read: Instance, nowMs: number, outOfCredit: boolean): Promise<Charged | undefined> {
  let exhausted = outOfCredit;
  const attempt = async (n: number): Promise<Charged | undefined | TryAgain> => {
    const instance = n === 1 ? read : await getInstanceItem(deps, read.instance_id);
    if (!instance || instance.metered_until === null) return undefined;
    const segments = segmentsOf(instance);
    const until = chargeableUntil(segments, nowMs);
    if (until <= Date.parse(instance.metered_until)) {
      if (!hasUnbilledTime(segments, instance.metered_until)) await leaveMeterIndex(deps, instance);
      return undefined;
    }
    const pieces = chargedPieces(segments, instance.metered_until, until);
    const amount = pieces.reduce((sum, piece) => sum + piece.amount, 0);
    const entry = {
      account_id: instance.account_id,
      entry_id: `meter#${instance.instance_id}#${instance.metered_until}`,
      kind: 'meter' as const,
      amount: -amount,
      instance_id: instance.instance_id,
      period_start: instance.metered_until,
      period_end: new Date(until).toISOString(),
      pieces,
      created_at: new Date(nowMs).toISOString(),
    };
    const last = !hasUnbilledTime(segments, entry.period_end);
    const book = async (keepCredit: boolean) =>
      keepCredit
        ? recordMeteredPeriodKeepingCredit(deps, entry, instance.version, last)
        : (await recordMeteredPeriod(deps, entry, instance.version, last))
          ? 'charged'
          : 'refused';
    let outcome = await book(!exhausted);
    if (outcome === 'exhausts-balance') {
      exhausted = true;
      outcome = await book(false);
    }
    if (outcome === 'charged') return { amount, exhausted };
    // Refused: another run charged it (the next read finds nothing due), or a change of rate landed between the read
    // and the charge (the version moved): read again and price it afresh.
    return TRY_AGAIN;
  };
  return retry(retryPolicies.meterVersionConflict, attempt, {
    exhausted: () => {
      throw new Error(`instance ${read.instance_id} kept changing while it was metered`);
    },
  });
}

/** How many of the meter's index shards runMeter reads at once (the meter state machine fans them out instead). */
const SHARD_CONCURRENCY = 4;
/** Accounts of a page charged at once by runMeter, per shard (4 shards: 32 charges at once). */
const RUN_ACCOUNT_CONCURRENCY = 8;
/**
 * Accounts of a page charged at once by one shard worker of the meter state machine. With its 16 shards at once that
 * is 512 charges in flight: at about 15 ms a transaction on AWS, 1M instances take about 29 s (see docs/billing.md).
 */
export const SHARD_ACCOUNT_CONCURRENCY = 32;
/**
 * How long a shard's lease lasts: longer than a shard worker may run (its timeout, 120 s), shorter than the meter's
 * period (5 minutes), so a worker that died never keeps the next run off its shard.
 */
export const METER_LEASE_MS = 150_000;

/** What one pass over a shard did; failures are kept, not thrown, so that one instance never stops the others. */
interface ShardTally {
  periodsCharged: number;
  amountCharged: number;
  readonly accountsBilled: Set<string>;
  readonly failures: unknown[];
}

const emptyTally = (): ShardTally => ({ periodsCharged: 0, amountCharged: 0, accountsBilled: new Set(), failures: [] });

/** Charges one account's instances of a page, then applies its billing pause if a charge took its balance to zero. */
async function meterAccount(deps: Deps, accountId: string, owned: readonly Instance[], nowMs: number, tally: ShardTally): Promise<void> {
  let exhausted = false;
  let billed = 0;
  for (const instance of owned) {
    try {
      const charged = await meterInstance(deps, instance, nowMs, exhausted);
      if (charged === undefined) continue;
      tally.periodsCharged += 1;
      tally.amountCharged += charged.amount;
      billed += charged.amount;
      exhausted ||= charged.exhausted;
    } catch (error) {
      // One instance that cannot be charged now (it is charged on a later run) must not stop the others.
      logger.error('could not meter an instance', { instance_id: instance.instance_id, error });
      tally.failures.push(error);
    }
  }
  if (billed > 0) tally.accountsBilled.add(accountId);
  if (exhausted) {
    await applyBillingPause(deps, accountId).catch((error: unknown) => {
      logger.error('could not apply the billing pause', { account_id: accountId, error });
      tally.failures.push(error);
    });
  }
  // The runway shortened: warn the customer, or recharge their card when they asked for it (never fails the meter).
  if (billed > 0) await reviewFunding(deps, accountId);
}

/**
 * Charges every instance of one index shard under the shard's lease (false, having done nothing, when another run
 * holds it). `accountsAtOnce` workers each take the next account of the pages read so far and charge its instances of
 * that page; the next page is read while they charge, as soon as fewer accounts than workers are waiting, so that no
 * worker waits on a read or idles at the end of a page.
 */
async function meterShardUnderLease(
  deps: Deps,
  shard: number,
  nowMs: number,
  holder: string,
  accountsAtOnce: number,
  tally: ShardTally,
): Promise<boolean> {
  const key = meterShardOf(shard);
  if (!(await takeMeterLease(deps, key, holder, deps.clock.now().getTime(), deps.clock.now().getTime() + METER_LEASE_MS))) return false;
  try {
    const pages = listInstancesToMeter(deps, key)[Symbol.asyncIterator]();
    const waiting: [string, Instance[]][] = [];
    let allRead = false;
    let reading: Promise<void> | undefined;
    const readAhead = () =>
      (reading ??= pages
        .next()
        .then(
          (page) => {
            if (page.done) allRead = true;
            else waiting.push(...Map.groupBy(page.value, (instance) => instance.account_id));
          },
          (error: unknown) => {
            // A shard that cannot be read now is metered on the next run (or the next attempt); what was read is charged.
            allRead = true;
            logger.error('could not read a meter shard', { shard: key, error });
            tally.failures.push(error);
          },
        )
        .finally(() => (reading = undefined)));
    const worker = async () => {
      for (;;) {
        if (!allRead && waiting.length <= accountsAtOnce) void readAhead();
        const next = waiting.shift();
        if (next) await meterAccount(deps, ...next, nowMs, tally);
        else if (allRead) return;
        else await readAhead();
      }
    };
    await Promise.all(Array.from({ length: accountsAtOnce }, worker));
  } finally {
    await releaseMeterLease(deps, key, holder).catch((error: unknown) =>
      logger.error('could not release a meter lease', { shard: key, error }),
    );
  }
  return true;
}

/**
 * The failures of a run as one error, named after the first, so that a workflow's Retry matches the transient ones
 * (a DynamoDB throttle the SDK gave up on, a transaction conflict) by name.
 */
function meterFailure(failures: readonly unknown[], what: string): AggregateError {
  const error = new AggregateError(failures, `${failures.length} instance(s), account(s) or shard(s) of ${what} could not be metered`);
  const first = failures[0];
  if (first instanceof Error && first.name !== 'AggregateError') error.name = first.name;
  return error;
}

export interface ShardMeterReport extends MeterReport {
  readonly shard: number;
  /** Another run held the shard's lease: this one left it alone. */
  readonly skipped: boolean;
}

/**
 * One shard of the meter (the meter state machine runs one per shard): charges each of its instances up to `nowMs`,
 * which every shard of one execution shares, one transaction per instance (ledger entry with a deterministic id,
 * balance, and `metered_until`, conditioned on `metered_until` not having moved, so a re-run or a retry never charges
 * a period twice, and on the instance's version, so no rate changed unseen). Each account whose balance a charge took
 * to zero or below is billing-paused as soon as its charges on the page are booked. `holder` (the execution) holds
 * the shard's lease meanwhile: another execution skips the shard, a retry of this one takes it over.
 */
export async function meterShard(deps: Deps, shard: number, nowMs: number, holder: string): Promise<ShardMeterReport> {
  if (!Number.isInteger(shard) || shard < 0 || shard >= METER_SHARDS) throw new Error(`no meter shard ${shard}`);
  const tally = emptyTally();
  const metered = await meterShardUnderLease(deps, shard, nowMs, holder, SHARD_ACCOUNT_CONCURRENCY, tally);
  const report = { shard, skipped: !metered, ...reportOf(tally) };
  logger.info(metered ? 'meter shard' : 'meter shard held by another run', report);
  countMetric(metricNames.meteredPeriods, report.periodsCharged);
  if (tally.failures.length > 0) throw meterFailure(tally.failures, `shard ${shard}`);
  return report;
}

const reportOf = (tally: ShardTally): MeterReport => ({
  periodsCharged: tally.periodsCharged,
  amountCharged: tally.amountCharged,
  accountsBilled: tally.accountsBilled.size,
});

/**
 * The whole meter in one process (the operations CLI, tests): every shard as meterShard charges it, four at once,
 * up to the same instant. Shards another run holds are left to it.
 */
export async function runMeter(deps: Deps, nowMs = deps.clock.now().getTime()): Promise<MeterReport> {
  const tally = emptyTally();
  const holder = `run#${deps.ids.uuid()}`;
  const shards = Array.from({ length: METER_SHARDS }, (_, i) => i);
  const workers = Array.from({ length: SHARD_CONCURRENCY }, async () => {
    for (let shard = shards.shift(); shard !== undefined; shard = shards.shift()) {
      await meterShardUnderLease(deps, shard, nowMs, holder, RUN_ACCOUNT_CONCURRENCY, tally);
    }
  });
  await Promise.all(workers);
  const report = reportOf(tally);
  logger.info('meter run', { ...report });
  countMetric(metricNames.meteredPeriods, report.periodsCharged);
  if (tally.failures.length > 0) throw meterFailure(tally.failures, 'the run');
  return report;
}
