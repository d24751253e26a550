import type { Deps } from './deps';
import { logger } from '../observability';
import { countRechargeOutcome, getAccount, moveBalanceNotice, type Account } from '../store/accounts';
import { attachPayment, closeTopUp, insertTopUp, listLatestTopUps } from '../store/top-ups';
import { balanceAt, burnRateOf } from '../model/burn';
import { nextNotice, noticeLevelOf, rechargeDue, runwayOf, type Runway } from '../model/payments';

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

/** An open auto-recharge younger than this is still under way: no second charge is started beside it. */
const RECHARGE_IN_FLIGHT_MS = 15 * 60_000;

/**
 * Charges the saved card when auto-recharge is on and the balance is at or under its threshold, unless a charge is
 * already under way. The credit comes from the provider's event, like any top-up's; a decline counts as a failure
 * (the third in a row turns auto-recharge off, and the customer is told).
 */
async function rechargeIfDue(deps: Deps, account: Account): Promise<void> {
  const settings = account.auto_recharge ?? undefined;
  if (!rechargeDue(settings, account.payment_method_id !== null, runwayOfAccount(deps, account).balanceMicros)) return;
  const nowMs = deps.clock.now().getTime();
  const latest = await listLatestTopUps(deps, account.account_id, 5);
  if (latest.some((t) => t.kind === 'auto_recharge' && t.status === 'open' && nowMs - Date.parse(t.created_at) < RECHARGE_IN_FLIGHT_MS))
    return;
  const topUpId = `tu_${deps.ids.uuid().replaceAll('-', '')}`;
  const amountCents = Math.round(settings!.amount_micros / 10_000);
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
    created_at: new Date(nowMs).toISOString(),
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

/** An auto-recharge that failed: the top-up closes as failed and, the first time only, counts against auto-recharge. */
export async function recordRechargeFailure(deps: Deps, accountId: string, topUpId: string, reason: string): Promise<void> {
  if (!(await closeTopUp(deps, topUpId, 'failed', reason))) return;
  if (await countRechargeOutcome(deps, accountId, false, reason))
    logger.warn('auto-recharge turned off after repeated failures', { account_id: accountId });
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
