import type { Deps } from './deps';
import { logger } from '../observability';
import {
  claimRechargeCrossing,
  countRechargeOutcome,
  endRechargeCrossing,
  getAccount,
  moveBalanceNotice,
  type Account,
} from '../store/accounts';
import { attachPayment, closeTopUp, getTopUp, insertTopUp } from '../store/top-ups';
import { balanceAt, burnRateOf } from '../model/burn';
import { nextNotice, noticeLevelOf, rechargePlan, rechargeTopUpId, runwayOf, type Runway } from '../model/payments';

/**
 * How long an account's money lasts, and what the service does about it as it runs short: warn the customer (each
 * level once per crossing, as account.balance_low events and e-mail, derived from the recorded level) and, when the
 * customer asked for it, charge their saved card.
 */

/** The account's money now, from its checkpoint alone: the balance at this moment, the burn rate and the runway. */
export function runwayOfAccount(deps: Deps, account: Account): { balanceMicros: number; burnMicrosPerHour: number; runway: Runway } {
  const now = deps.clock.now();
  const balanceMicros = balanceAt(account, now.getTime());
  const burnMicrosPerHour = Math.round(burnRateOf(account.burning));
  return { balanceMicros, burnMicrosPerHour, runway: runwayOf(balanceMicros, burnRateOf(account.burning), now) };
}

/** Records the runway's warning level when it moved: deeper is a warning (the event follows from the change). */
async function reviewRunway(deps: Deps, account: Account): Promise<void> {
  const { runway } = runwayOfAccount(deps, account);
  const { record, warn } = nextNotice(account.balance_notice, noticeLevelOf(runway));
  if (record === account.balance_notice) return;
  if (await moveBalanceNotice(deps, account.account_id, account.balance_notice, record))
    logger.info(warn ? 'balance low: the customer is warned' : 'runway warning cleared', { account_id: account.account_id, level: record });
}

/**
 * Charges the saved card once per crossing of the auto-recharge threshold (shared/model/payments.ts, rechargePlan):
 * the review that claims the crossing charges it; a crossing whose charge may not have reached the provider is
 * charged again under the same key, which the provider answers with the charge it made. The credit comes from the
 * provider's event, like any top-up's; a decline counts as a failure (the third in a row turns auto-recharge off, and
 * the customer is told) and ends the crossing.
 */
async function rechargeIfDue(deps: Deps, account: Account): Promise<void> {
  const now = deps.clock.now();
  const settings = account.auto_recharge ?? undefined;
  const plan = rechargePlan(
    {
      settings,
      hasSavedCard: account.payment_method_id !== null,
      balanceMicros: runwayOfAccount(deps, account).balanceMicros,
      crossing: account.recharge_crossing,
      openSince: account.recharge_open_since,
    },
    now.getTime(),
  );
  const accountId = account.account_id;
  switch (plan.kind) {
    case 'none':
      return;
    case 'end':
      if (await endRechargeCrossing(deps, accountId, plan.crossing)) logger.info('auto-recharge crossing ended', { account_id: accountId });
      return;
    case 'claim':
      if (await claimRechargeCrossing(deps, accountId, plan.crossing, now.toISOString()))
        await chargeCrossing(deps, account, plan.crossing, Math.round(settings!.amount_micros / 10_000));
      return;
    case 'resume': {
      const topUp = await getTopUp(deps, rechargeTopUpId(accountId, plan.crossing));
      if (topUp?.status === 'failed') await endRechargeCrossing(deps, accountId, plan.crossing);
      // Charged already (its outcome comes as the provider's event), or not yet recorded: charge it, with its own amount.
      else if (!topUp || (topUp.status === 'open' && topUp.payment_intent_id === null))
        await chargeCrossing(deps, account, plan.crossing, topUp?.amount_cents ?? Math.round(settings!.amount_micros / 10_000));
      return;
    }
  }
}

/** Records the crossing's top-up (once) and charges the saved card for it, keyed by the top-up's id. */
async function chargeCrossing(deps: Deps, account: Account, crossing: number, amountCents: number): Promise<void> {
  const topUpId = rechargeTopUpId(account.account_id, crossing);
  await insertTopUp(deps, {
    top_up_id: topUpId,
    account_id: account.account_id,
    kind: 'auto_recharge',
    amount_cents: amountCents,
    status: 'open',
    provider_session_id: null,
    checkout_url: null,
    payment_intent_id: null,
    save_card: false,
    created_at: deps.clock.now().toISOString(),
    expires_at: null,
    paid_at: null,
    refunded_cents: 0,
    failure_reason: null,
  });
  const charged = await deps.payments.chargeSavedCard({
    topUpId,
    accountId: account.account_id,
    customerId: account.payment_customer_id!,
    paymentMethodId: account.payment_method_id!,
    amountCents,
  });
  if (charged.paymentIntentId) await attachPayment(deps, topUpId, charged.paymentIntentId);
  if (charged.outcome === 'declined') await recordRechargeFailure(deps, account.account_id, topUpId, charged.reason);
  else logger.info('auto-recharge charged the saved card', { account_id: account.account_id, top_up_id: topUpId });
}

/**
 * An auto-recharge that failed: the top-up closes as failed and, the first time only, counts against auto-recharge;
 * then its crossing ends (however often the failure is reported), so the next review may try again.
 */
export async function recordRechargeFailure(deps: Deps, accountId: string, topUpId: string, reason: string): Promise<void> {
  if ((await closeTopUp(deps, topUpId, 'failed', reason)) && (await countRechargeOutcome(deps, accountId, false, reason)))
    logger.warn('auto-recharge turned off after repeated failures', { account_id: accountId });
  const account = await getAccount(deps, accountId);
  if (account?.recharge_open_since !== undefined && rechargeTopUpId(accountId, account.recharge_crossing) === topUpId)
    await endRechargeCrossing(deps, accountId, account.recharge_crossing);
}

/** On a review of the balance: the runway's warning, then auto-recharge. Never fails its caller (both are retried later). */
export async function reviewFunding(deps: Deps, accountId: string): Promise<void> {
  try {
    const account = await getAccount(deps, accountId);
    if (!account || account.deleted_at !== null) return;
    await reviewRunway(deps, account);
    await rechargeIfDue(deps, account);
  } catch (error) {
    logger.error('could not review the account’s funding', { account_id: accountId, error });
  }
}
