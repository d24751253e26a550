import { randomUUID } from 'node:crypto';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import { getAccount, setBillingPaused, type Account } from '../store/accounts';
import { getInstanceItem, leaveMeterIndex, listInstancesToMeter, listOwnedInstances, type InstanceItem } from '../store/instances';
import { recordLedgerEntry, recordMeteredPeriod } from '../store/ledger';
import { chargedPieces, hasUnbilledTime, METER_SHARDS, meterShardOf, segmentsOf, type BillingSegment } from './billing-segments';
import { powerOffForBilling } from './lifecycle';

/** The meter charges in five-minute periods, aligned to the clock, so every run agrees on period boundaries. */
export const METER_PERIOD_MS = 5 * 60_000;

async function requireAccount(accountId: string): Promise<Account> {
  const account = await getAccount(accountId);
  if (!account) throw new Error(`account ${accountId} does not exist`);
  return account;
}

/** Credits a deposit; a balance brought above zero lifts a billing pause (instances stay off until powered on). */
export async function deposit(accountId: string, amountMicros: number, entryId = `deposit#${randomUUID()}`): Promise<Account> {
  if (!Number.isSafeInteger(amountMicros) || amountMicros <= 0) throw new Error('a deposit is a positive amount');
  await recordLedgerEntry({
    account_id: accountId,
    entry_id: entryId,
    kind: 'deposit',
    amount: amountMicros,
    created_at: new Date().toISOString(),
  });
  // Conditional on the balance being above zero now, so it needs no read first.
  if (await setBillingPaused(accountId, false)) logger.info('billing pause lifted', { account_id: accountId });
  return requireAccount(accountId);
}

/** A manual debit (operators); it applies the billing pause exactly as the meter does. */
export async function charge(accountId: string, amountMicros: number, description: string): Promise<Account> {
  if (!Number.isSafeInteger(amountMicros) || amountMicros <= 0) throw new Error('a charge is a positive amount');
  await recordLedgerEntry({
    account_id: accountId,
    entry_id: `charge#${randomUUID()}`,
    kind: 'charge',
    amount: -amountMicros,
    description,
    created_at: new Date().toISOString(),
  });
  return enforceBillingPause(accountId);
}

/**
 * At a balance of zero or below the account is billing-paused and its running instances are powered off by the
 * system. Safe to repeat: an instance busy or refused now is powered off on a later run.
 */
export async function enforceBillingPause(accountId: string): Promise<Account> {
  if (await setBillingPaused(accountId, true)) {
    logger.warn('account billing-paused', { account_id: accountId });
    countMetric(metricNames.billingPauses);
  }
  // Decide on a fresh read: a deposit that landed meanwhile keeps the servers running.
  const account = await requireAccount(accountId);
  if (!account.billing_paused) return account;
  const running = (await listOwnedInstances(accountId)).filter((i) => i.status === 'active' && i.active_job_id === null);
  await Promise.all(running.map(powerOffForBilling));
  return account;
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

/** Charges one instance up to now, each segment at its own rate; the amount, or undefined when nothing was due. */
async function meterInstance(read: InstanceItem, nowMs: number): Promise<number | undefined> {
  let instance: InstanceItem | undefined = read;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) instance = await getInstanceItem(read.instance_id);
    if (!instance || instance.metered_until === null) return undefined;
    const segments = segmentsOf(instance);
    const until = chargeableUntil(segments, nowMs);
    if (until <= Date.parse(instance.metered_until)) {
      if (!hasUnbilledTime(segments, instance.metered_until)) await leaveMeterIndex(instance);
      return undefined;
    }
    const pieces = chargedPieces(segments, instance.metered_until, until);
    const amount = pieces.reduce((sum, piece) => sum + piece.amount, 0);
    const charged = await recordMeteredPeriod(
      {
        account_id: instance.account_id,
        entry_id: `meter#${instance.instance_id}#${instance.metered_until}`,
        kind: 'meter',
        amount: -amount,
        instance_id: instance.instance_id,
        period_start: instance.metered_until,
        period_end: new Date(until).toISOString(),
        pieces,
        created_at: new Date(nowMs).toISOString(),
      },
      instance.version,
      !hasUnbilledTime(segments, new Date(until).toISOString()),
    );
    if (charged) return amount;
    // Refused: another run charged it (the next read finds nothing due), or a change of rate landed between the read
    // and the charge (the version moved): read again and price it afresh.
  }
  throw new Error(`instance ${read.instance_id} kept changing while it was metered`);
}

/** How many of the meter's index shards are read at once, and how many accounts of a page are charged at once. */
const SHARD_CONCURRENCY = 4;
const ACCOUNT_CONCURRENCY = 8;

/**
 * Charges every instance with time left to bill, from where it was last charged until now (or its deletion), one
 * transaction per instance: ledger entry with a deterministic id, balance, and `metered_until`, conditioned on
 * `metered_until` not having moved (a re-run or a retry never charges a period twice) and on the instance's
 * version (no rate changed unseen). It reads the sparse meter index shard by shard, a page at a time, and applies
 * each account's billing pause as soon as that page's charges for it are booked. Each account's balance is read once
 * a run and lowered by what the run charges it: only an account whose balance may have reached zero is checked for
 * the pause (deposits only raise a balance, and other debits apply the pause themselves).
 */
export async function runMeter(nowMs = Date.now()): Promise<MeterReport> {
  const report = { periodsCharged: 0, amountCharged: 0, accountsBilled: new Set<string>() };
  const failures: unknown[] = [];
  // Each account's balance before this run's charges, less what they took; read once, before the first charge.
  const balances = new Map<string, number>();
  const balanceReads = new Map<string, Promise<void>>();
  const readBalance = (accountId: string) => {
    const read = balanceReads.get(accountId) ?? requireAccount(accountId).then((account) => void balances.set(accountId, account.balance));
    balanceReads.set(accountId, read);
    return read;
  };
  const meterAccount = async (accountId: string, owned: InstanceItem[]) => {
    const known = await readBalance(accountId).then(
      () => true,
      () => (balanceReads.delete(accountId), false),
    );
    let billed = 0;
    for (const instance of owned) {
      try {
        const charged = await meterInstance(instance, nowMs);
        if (charged === undefined) continue;
        report.periodsCharged += 1;
        report.amountCharged += charged;
        billed += charged;
      } catch (error) {
        // One instance that cannot be charged now (it is charged on a later run) must not stop the others.
        logger.error('could not meter an instance', { instance_id: instance.instance_id, error });
        failures.push(error);
      }
    }
    if (billed === 0) return;
    report.accountsBilled.add(accountId);
    // No await between reading and lowering the balance: charges of one account in other shards subtract too.
    const balance = known ? (balances.get(accountId) ?? 0) - billed : 0;
    if (known) balances.set(accountId, balance);
    if (balance > 0) return;
    await enforceBillingPause(accountId).catch((error: unknown) => {
      logger.error('could not apply the billing pause', { account_id: accountId, error });
      failures.push(error);
    });
  };
  const meterPage = async (instances: InstanceItem[]) => {
    const accounts = [...Map.groupBy(instances, (instance) => instance.account_id)];
    const workers = Array.from({ length: ACCOUNT_CONCURRENCY }, async () => {
      for (let next = accounts.shift(); next !== undefined; next = accounts.shift()) await meterAccount(...next);
    });
    await Promise.all(workers);
  };
  const shards = Array.from({ length: METER_SHARDS }, (_, i) => meterShardOf(i));
  const workers = Array.from({ length: SHARD_CONCURRENCY }, async () => {
    for (let shard = shards.shift(); shard !== undefined; shard = shards.shift()) {
      try {
        for await (const page of listInstancesToMeter(shard)) await meterPage(page);
      } catch (error) {
        // A shard that cannot be read now is metered on the next run; the others go on.
        logger.error('could not read a meter shard', { shard, error });
        failures.push(error);
      }
    }
  });
  await Promise.all(workers);
  const { periodsCharged, amountCharged } = report;
  const accountsBilled = report.accountsBilled.size;
  logger.info('meter run', { periodsCharged, amountCharged, accountsBilled });
  countMetric(metricNames.meteredPeriods, periodsCharged);
  if (failures.length > 0)
    throw new AggregateError(failures, `${failures.length} instance(s), account(s) or shard(s) could not be metered`);
  return { periodsCharged, amountCharged, accountsBilled };
}
