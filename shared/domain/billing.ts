import type { Deps } from './deps';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import { setTimeout as sleep } from 'node:timers/promises';
import { getAccount, type Account } from '../store/accounts';
import { getInstanceItem, listLegacyMetered, listOwnedInstances, moveToCheckpoint } from '../store/instances';
import { recordLedgerEntry } from '../store/ledger';
import { bookingItems, listAccountsDue, REVIEW_SHARDS, usageEntry } from '../store/checkpoints';
import { transactWrite } from '../store/dynamo-helpers';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { LEGACY_METER_SHARDS, legacyMeterShardOf } from '../model/billing-segments';
import { balanceAt, billAll, reviewAtOf, statementCut } from '../model/burn';
import { powerOffForBilling } from './lifecycle';
import { reviewFunding } from './funding';
import { retry, retryPolicies, TRY_AGAIN } from '../retry';
import { DependencyTransientError } from '../transient-errors';

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
  return applyBalanceRules(deps, accountId);
}

/** A manual debit (operators); it applies the billing pause as any debit does. */
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
  return applyBalanceRules(deps, accountId);
}

/**
 * Reviews the account on its balance now (settled balance less what its servers have cost since): at zero or below
 * it is billing-paused and its running instances are powered off by the system; above zero a pause is lifted
 * (instances stay off until powered on). The runway's warnings and auto-recharge are reviewed, the daily statement
 * booked when one is due, and the next review projected. Safe to repeat: an instance busy or refused now is powered
 * off on a later review.
 */
export async function applyBalanceRules(deps: Deps, accountId: string): Promise<Account> {
  const account = await reviewCheckpoint(deps, accountId);
  if (!account.billing_paused) return account;
  const running = (await listOwnedInstances(deps, accountId)).filter((i) => i.status === 'active' && i.active_job_id === null);
  await Promise.all(running.map((instance) => powerOffForBilling(deps, instance)));
  return account;
}

/**
 * The review of the account's checkpoint alone: the warnings and auto-recharge, then the statement, the pause set or
 * lifted and the next review, in one conditional write (the servers of a paused account are powered off by
 * applyBalanceRules, or by the fleet sweep, which holds every pause).
 */
export async function reviewCheckpoint(deps: Deps, accountId: string): Promise<Account> {
  // The warnings and auto-recharge first: what they record decides when the account is next reviewed.
  await reviewFunding(deps, accountId);
  return retry(retryPolicies.versionConflict, () => moveCheckpointOnReview(deps, accountId), {
    exhausted: () => {
      throw new DependencyTransientError(`account ${accountId} kept changing while it was reviewed`);
    },
  });
}

/** One attempt of a review's write: the statement, the pause and the next review, at the checkpoint's version read. */
async function moveCheckpointOnReview(deps: Deps, accountId: string) {
  const account = await requireAccount(deps, accountId);
  const nowMs = deps.clock.now().getTime();
  const nowIso = new Date(nowMs).toISOString();
  const cut = statementCut(account.burning, nowMs);
  const billed = cut === undefined ? undefined : billAll(account.burning, cut);
  const entry =
    billed && cut !== undefined && billed.pieces.length > 0
      ? usageEntry(accountId, `statement#${new Date(cut).toISOString()}`, billed.pieces, nowIso)
      : null;
  const move = { burning: billed?.burning ?? account.burning, delta: entry?.amount ?? 0, billingPaused: balanceAt(account, nowMs) <= 0 };
  const reviewAt = reviewAtOf(
    { ...account, balance: account.balance + move.delta, burning: move.burning, billing_paused: move.billingPaused },
    nowMs,
  );
  const reviewAtIso = reviewAt === null ? null : new Date(reviewAt).toISOString();
  if (!billed && move.billingPaused === account.billing_paused && reviewAtIso === (account.review_at ?? null)) return account;
  try {
    await transactWrite(deps, { TransactItems: bookingItems(deps, account, entry, move, nowMs) });
  } catch (error) {
    // Another move of the checkpoint came first (a change of rate, another review): review on the new one.
    if (error instanceof TransactionCanceledException && error.CancellationReasons?.some((r) => r.Code === 'ConditionalCheckFailed'))
      return TRY_AGAIN;
    throw error;
  }
  if (move.billingPaused !== account.billing_paused) {
    logger.warn(move.billingPaused ? 'account billing-paused' : 'billing pause lifted', { account_id: accountId });
    if (move.billingPaused) countMetric(metricNames.billingPauses);
  }
  return {
    ...account,
    balance: account.balance + move.delta,
    burning: move.burning,
    billing_paused: move.billingPaused,
    review_at: reviewAtIso ?? undefined,
  };
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

/**
 * How far ahead the minute sweep looks: an account due within it is reviewed at its moment (the sweep waits for it),
 * so with a sweep a minute no review is more than half a minute late.
 */
export const REVIEW_LOOKAHEAD_MS = 30_000;
/** Accounts reviewed at once by one sweep. */
const REVIEWS_AT_ONCE = 16;

export interface ReviewReport {
  readonly reviewed: number;
  readonly moved: number;
  readonly failures: number;
}

/**
 * The minute sweep: every account whose review falls due within the look-ahead (from the sparse review index:
 * projected exhaustion, runway warnings, auto-recharge, the daily statement) is reviewed at its moment; instances
 * still metered the old way move to their account's checkpoint first. One account that fails is logged and reviewed
 * on the next sweep (its entry stays in the index).
 */
export async function reviewDueAccounts(deps: Deps): Promise<ReviewReport> {
  const moved = await moveLegacyMetered(deps);
  const untilIso = new Date(deps.clock.now().getTime() + REVIEW_LOOKAHEAD_MS).toISOString();
  const due: { accountId: string; at: number }[] = [];
  for (let shard = 0; shard < REVIEW_SHARDS; shard++) {
    for await (const page of listAccountsDue(deps, shard, untilIso))
      due.push(...page.map((entry) => ({ accountId: entry.account_id, at: Date.parse(entry.review_at) })));
  }
  due.sort((a, b) => a.at - b.at);
  let failures = 0;
  const worker = async () => {
    for (let next = due.shift(); next; next = due.shift()) {
      const wait = next.at - deps.clock.now().getTime();
      if (wait > 0) await sleep(wait);
      await applyBalanceRules(deps, next.accountId).catch((error: unknown) => {
        failures += 1;
        logger.error('could not review an account', { account_id: next?.accountId, error });
      });
    }
  };
  const total = due.length;
  await Promise.all(Array.from({ length: REVIEWS_AT_ONCE }, worker));
  const report = { reviewed: total - failures, moved, failures };
  logger.info('account reviews', { ...report });
  return report;
}

/**
 * Moves every instance still metered the old way to its account's checkpoint (shared/store/instances.ts
 * moveToCheckpoint): safe to rerun, and run by every sweep, so a deploy moves them within a minute; the number moved.
 */
export async function moveLegacyMetered(deps: Deps): Promise<number> {
  let moved = 0;
  for (let shard = 0; shard < LEGACY_METER_SHARDS; shard++) {
    for await (const page of listLegacyMetered(deps, legacyMeterShardOf(shard))) {
      for (const instance of page) if (await moveToCheckpoint(deps, instance)) moved += 1;
    }
  }
  if (moved > 0) logger.info('instances moved from the old meter to their account checkpoints', { moved });
  return moved;
}
