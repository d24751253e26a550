import type { Deps } from './deps';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { metricNames } from '../metric-names';
import { countMetric, durationMetric, logger } from '../observability';
import { badRequest, Failure, notFound } from '../model/errors';
import {
  centsToMicros,
  creditEntryId,
  creditRefusal,
  usdToCents,
  type AutoRecharge,
  type PaymentEvent,
  type PaymentRefusal,
} from '../model/payments';
import type { MailMessage } from '../mail';
import { countRechargeOutcome, getAccount, saveCard, setAutoRecharge, type Account } from '../store/accounts';
import { getLedgerEntry, recordLedgerEntry, type LedgerEntry } from '../store/ledger';
import {
  attachCheckout,
  closeTopUp,
  creditTopUp,
  getTopUp,
  insertTopUp,
  listLatestTopUps,
  listOpenTopUps,
  paymentEventSeen,
  recordRefund,
  rememberPaymentEvent,
  type TopUp,
} from '../store/top-ups';
import { PaymentRefusedError, PaymentSignatureError } from '../payments/provider';
import {
  TOP_UP_LIMITS,
  type AutoRechargeBody,
  type BillingView,
  type CreateTopUpBody,
  type TopUpView,
  type WebhookReceipt,
} from '../schemas/billing';
import { microsToUsd } from './accounts';
import { KEY_DEPOSIT_MIN_MICROS } from './key-management';
import { applyBalanceRules, reviewCheckpoint } from './billing';
import { recordRechargeFailure, runwayOfAccount } from './funding';
import { retry, retryPolicies, TRY_AGAIN } from '../retry';
import { DependencyTransientError } from '../transient-errors';

/**
 * Customers fund their own accounts: a top-up opens the provider's hosted checkout, and the balance is credited only
 * from the provider's signed event, exactly once per payment whatever the provider sends, in whatever order.
 * Refunds and disputes take money back the same way; the balance rules (the billing pause at zero) do the rest.
 */

const centsToUsd = (cents: number) => microsToUsd(centsToMicros(cents));

function topUpView(topUp: TopUp): TopUpView {
  return {
    top_up_id: topUp.top_up_id,
    kind: topUp.kind,
    status: topUp.status,
    amount_usd: centsToUsd(topUp.amount_cents),
    checkout_url: topUp.status === 'open' ? topUp.checkout_url : null,
    provider_session_id: topUp.provider_session_id,
    created_at: topUp.created_at,
    expires_at: topUp.expires_at,
    paid_at: topUp.paid_at,
    refunded_usd: centsToUsd(topUp.refunded_cents),
    failure_reason: topUp.failure_reason,
  };
}

const topUpNotFound = () => notFound('Top-up not found');

const TOP_UP_ID = /^tu_[0-9a-f]{32}$/;

/** The top-up an id names, when it is one of ours (ids from outside are checked before any read). */
const topUpNamed = (deps: Deps, topUpId: string | undefined) =>
  topUpId && TOP_UP_ID.test(topUpId) ? getTopUp(deps, topUpId) : Promise.resolve(undefined);

/** Where the provider's page sends the customer back: the console's billing page, which waits for the credit. */
const returnUrlOf = (deps: Deps, topUpId: string) => `${deps.config.console.url}#/billing?top_up=${encodeURIComponent(topUpId)}`;

/**
 * Opens a top-up: recorded first (so that an event about it always finds it), then the provider's checkout, keyed by
 * the top-up's id so that a retry after a lost answer opens no second one.
 */
export async function startTopUp(deps: Deps, account: Account, body: CreateTopUpBody): Promise<TopUpView> {
  const amountCents = usdToCents(body.amount_usd);
  const topUp: TopUp = {
    top_up_id: `tu_${deps.ids.uuid().replaceAll('-', '')}`,
    account_id: account.account_id,
    kind: 'checkout',
    amount_cents: amountCents,
    status: 'open',
    provider_session_id: null,
    checkout_url: null,
    payment_intent_id: null,
    save_card: body.save_card ?? false,
    created_at: deps.clock.now().toISOString(),
    expires_at: null,
    paid_at: null,
    refunded_cents: 0,
    failure_reason: null,
  };
  await insertTopUp(deps, topUp);
  const checkout = await openCheckout(deps, account, topUp).catch((error: unknown) => refusedCheckout(deps, topUp, error));
  const attached = await attachCheckout(deps, topUp.top_up_id, checkout);
  return topUpView(
    attached ?? { ...topUp, provider_session_id: checkout.sessionId, checkout_url: checkout.url, expires_at: checkout.expiresAt },
  );
}

/** The provider's checkout for a top-up, keyed by the top-up: asked again, it is the same checkout, never a second. */
const openCheckout = (deps: Deps, account: Account, topUp: TopUp) =>
  deps.payments.startCheckout({
    topUpId: topUp.top_up_id,
    accountId: account.account_id,
    email: account.email,
    amountCents: topUp.amount_cents,
    customerId: account.payment_customer_id,
    saveCard: topUp.save_card,
    returnUrl: returnUrlOf(deps, topUp.top_up_id),
    openedAt: topUp.created_at,
  });

/** How long a customer is asked to wait when the provider will not serve us: longer than a brief outage of ours. */
const PAYMENTS_RETRY_AFTER_SECONDS = 60;

/**
 * A checkout the provider refused for sure closes its top-up as failed at once, and the customer is told whether
 * trying later may help; any other failure (a timeout: the checkout may exist) leaves the top-up open, for the
 * reconciler to ask the provider again under the same key.
 */
async function refusedCheckout(deps: Deps, topUp: TopUp, error: unknown): Promise<never> {
  if (!(error instanceof PaymentRefusedError)) throw error;
  logger.error('the payment provider refused to open a checkout', { top_up_id: topUp.top_up_id, reason: error.reason, error });
  await closeTopUp(deps, topUp.top_up_id, 'failed', 'The payment provider could not open the checkout.');
  throw error.reason === 'unavailable'
    ? new Failure('unavailable', 'Payments are unavailable', {}, { 'Retry-After': String(PAYMENTS_RETRY_AFTER_SECONDS) })
    : new Failure('upstream_error', 'The payment provider refused the checkout');
}

export async function findTopUp(deps: Deps, accountId: string, topUpId: string): Promise<TopUpView> {
  const topUp = await topUpNamed(deps, topUpId);
  if (!topUp || topUp.account_id !== accountId) throw topUpNotFound();
  return topUpView(topUp);
}

const LATEST_TOP_UPS = 10;

/** The account's money: balance, burn rate and runway (computed now, from its checkpoint), and the latest top-ups. */
export async function billingOverview(deps: Deps, found: Account): Promise<BillingView> {
  const topUps = await listLatestTopUps(deps, found.account_id, LATEST_TOP_UPS);
  // A balance read at zero or below is paused now, not only at its review's moment (the sweep may be late or stopped):
  // the review's write is conditional and idempotent, and a read that finds money left costs nothing more. The fleet
  // sweep powers off what the pause holds, so a read's bundle carries none of the power-off path.
  const account =
    !found.billing_paused && runwayOfAccount(deps, found).balanceMicros <= 0 ? await reviewCheckpoint(deps, found.account_id) : found;
  const { balanceMicros, burnMicrosPerHour, runway } = runwayOfAccount(deps, account);
  const recharge = account.auto_recharge;
  return {
    balance_usd: microsToUsd(balanceMicros),
    balance_micros: balanceMicros,
    total_deposited_usd: microsToUsd(account.total_deposited),
    deposit_met: account.total_deposited >= KEY_DEPOSIT_MIN_MICROS,
    billing_paused: account.billing_paused,
    burn_rate_usd_per_hour: microsToUsd(burnMicrosPerHour),
    burn_rate_micros_per_hour: burnMicrosPerHour,
    runway_hours: runway.hours === null ? null : Math.round(runway.hours * 100) / 100,
    exhausts_at: runway.exhaustsAt,
    balance_notice: account.balance_notice,
    saved_card: account.payment_method_id !== null,
    auto_recharge: recharge
      ? {
          enabled: recharge.enabled,
          threshold_usd: microsToUsd(recharge.threshold_micros),
          amount_usd: microsToUsd(recharge.amount_micros),
          failures: recharge.failures,
          disabled_reason: recharge.disabled_reason,
        }
      : null,
    top_ups: topUps.map(topUpView),
    top_up_limits: TOP_UP_LIMITS,
  };
}

/** The e-mail that tells an account its auto-recharge was set: whoever set it, the card's owner hears of it. */
function autoRechargeSetMail(account: Account, settings: AutoRecharge, consoleUrl: string): MailMessage {
  const billing = `${consoleUrl}#/billing`;
  if (!settings.enabled)
    return {
      to: account.email,
      subject: 'Auto-recharge was turned off',
      text: `Auto-recharge was turned off for your account: your saved card will not be charged when your balance runs low.\n\nBilling: ${billing}`,
    };
  return {
    to: account.email,
    subject: 'Auto-recharge was turned on',
    text: `Auto-recharge was set for your account: each time your balance falls to $${microsToUsd(settings.threshold_micros)} or below, your saved card is charged $${microsToUsd(settings.amount_micros)}.\n\nIf you did not do this, turn it off and change your password: ${billing}`,
  };
}

/**
 * Turns auto-recharge on (a saved card is needed) or off, and tells the account by e-mail; the account's billing as
 * it is then.
 */
export async function configureAutoRecharge(deps: Deps, account: Account, body: AutoRechargeBody): Promise<BillingView> {
  if (body.enabled && account.payment_method_id === null)
    throw new Failure('conflict', 'No saved card', { message: 'Add funds once with "save_card": true to save a card for auto-recharge' });
  const settings: AutoRecharge = {
    enabled: body.enabled,
    threshold_micros: usdToCents(body.threshold_usd) * 10_000,
    amount_micros: usdToCents(body.amount_usd) * 10_000,
    failures: 0,
    disabled_reason: null,
  };
  await setAutoRecharge(deps, account.account_id, settings);
  await deps.mail.send(autoRechargeSetMail(account, settings, deps.config.console.url));
  const updated = (await getAccount(deps, account.account_id)) ?? account;
  if (body.enabled) await reviewCheckpoint(deps, account.account_id);
  return billingOverview(deps, (await getAccount(deps, account.account_id)) ?? updated);
}

type Outcome = WebhookReceipt['outcome'];

/** A payment the service cannot match to a top-up of its own: refused, logged and counted (an alarm watches it). */
function refused(event: PaymentEvent, reason: PaymentRefusal): Outcome {
  logger.warn('a payment event was refused', { event_id: event.eventId, kind: event.kind, reason });
  countMetric(metricNames.paymentsUnmatched);
  return 'refused';
}

async function creditPayment(deps: Deps, event: Extract<PaymentEvent, { kind: 'checkout_paid' | 'payment_succeeded' }>): Promise<Outcome> {
  const topUp = await topUpNamed(deps, event.tags.topUpId);
  const sessionId = event.kind === 'checkout_paid' ? event.sessionId : undefined;
  const refusal = creditRefusal(topUp, {
    tags: event.tags,
    amountCents: event.amountCents,
    sessionId,
    paymentIntentId: event.paymentIntentId,
  });
  if (refusal || !topUp) return refused(event, refusal ?? 'unknown_top_up');
  if (event.kind === 'payment_succeeded' && topUp.kind !== 'auto_recharge') return 'ignored';
  const entry = {
    account_id: topUp.account_id,
    entry_id: creditEntryId({ sessionId, paymentIntentId: event.paymentIntentId }),
    kind: 'top_up' as const,
    amount: centsToMicros(topUp.amount_cents),
    description: topUp.kind === 'auto_recharge' ? 'Auto-recharge' : 'Card top-up',
    created_at: deps.clock.now().toISOString(),
  };
  const booked = await creditTopUp(deps, topUp, entry, { sessionId: sessionId ?? null, paymentIntentId: event.paymentIntentId });
  if (booked) logger.info('top-up credited', { account_id: topUp.account_id, top_up_id: topUp.top_up_id, amount: entry.amount });
  if (topUp.kind === 'auto_recharge') await countRechargeOutcome(deps, topUp.account_id, true);
  if (topUp.save_card && event.paymentIntentId) {
    const facts = await deps.payments.paymentFacts(event.paymentIntentId);
    if (facts?.customerId && facts.paymentMethodId) await saveCard(deps, topUp.account_id, facts.customerId, facts.paymentMethodId);
  }
  await applyBalanceRules(deps, topUp.account_id);
  return booked ? 'applied' : 'duplicate';
}

/** The top-up a payment paid, as the provider says (its metadata, read again) and as we recorded it. */
async function topUpOfPayment(deps: Deps, paymentIntentId: string): Promise<TopUp | undefined> {
  const facts = await deps.payments.paymentFacts(paymentIntentId);
  const topUp = await topUpNamed(deps, facts?.tags.topUpId);
  if (!topUp || topUp.account_id !== facts?.tags.accountId) return undefined;
  if (topUp.payment_intent_id !== null && topUp.payment_intent_id !== paymentIntentId) return undefined;
  return topUp;
}

/**
 * A debit's payment credited before the debit: providers deliver out of order, and a refund or a dispute booked first
 * would pause the account (and power its servers off) for money it has in fact been paid. The credit is applied from
 * the provider's own facts, exactly as the reconciler applies them (the same keyed entry), so that the payment's own
 * event, arriving later, is a duplicate. When the provider cannot say the payment succeeded, the debit waits: the
 * error answers 5xx and the provider delivers the event again.
 */
async function creditBeforeDebit(deps: Deps, topUp: TopUp, paymentIntentId: string): Promise<void> {
  if (topUp.status === 'paid') return;
  const paid = topUp.provider_session_id
    ? await deps.payments.checkoutNow(topUp.provider_session_id)
    : topUp.kind === 'auto_recharge'
      ? await deps.payments.paymentNow(paymentIntentId)
      : undefined;
  if (paid?.kind !== 'checkout_paid' && paid?.kind !== 'payment_succeeded')
    throw new DependencyTransientError(`the payment of top-up ${topUp.top_up_id} is not credited yet: its debit waits`);
  if ((await creditPayment(deps, paid)) === 'refused')
    throw new DependencyTransientError(`the payment of top-up ${topUp.top_up_id} could not be credited: its debit waits`);
}

/** Debits what was refunded since the refunds last booked: the largest refunded total seen is the truth. */
async function debitRefund(deps: Deps, event: Extract<PaymentEvent, { kind: 'refunded' }>): Promise<Outcome> {
  const { paymentIntentId } = event;
  // A charge without a PaymentIntent was not made by a checkout or a recharge of ours.
  if (paymentIntentId === null) return refused(event, 'unknown_top_up');
  let topUp = await topUpOfPayment(deps, paymentIntentId);
  if (!topUp) return refused(event, 'unknown_top_up');
  const accountId = topUp.account_id;
  await creditBeforeDebit(deps, topUp, paymentIntentId);
  const outcome = await retry(retryPolicies.versionConflict, async (attempt) => {
    if (attempt > 1) topUp = await getTopUp(deps, topUp!.top_up_id);
    if (!topUp || event.refundedCents <= topUp.refunded_cents) return 'duplicate' as const;
    const booked = await recordRefund(deps, topUp, event.refundedCents, {
      account_id: accountId,
      entry_id: `refund#${event.chargeId}#${event.refundedCents}`,
      kind: 'refund',
      amount: -centsToMicros(event.refundedCents - topUp.refunded_cents),
      description: 'Refund of a top-up',
      created_at: deps.clock.now().toISOString(),
    }).catch((error: unknown) => {
      // The refunded total moved meanwhile (a concurrent event): read it again.
      if (error instanceof TransactionCanceledException) return TRY_AGAIN;
      throw error;
    });
    return booked === TRY_AGAIN ? TRY_AGAIN : booked ? ('applied' as const) : ('duplicate' as const);
  });
  await applyBalanceRules(deps, accountId);
  return outcome;
}

/**
 * A dispute takes the disputed amount and the provider's fee at once; a won dispute gives back what its opening took,
 * never more. A won dispute whose opening was never booked (its event late, lost or never sent) books that opening
 * first, from its own amounts under the opening's key: the two net to nothing, and a late opening is a duplicate.
 */
async function settleDispute(deps: Deps, event: Extract<PaymentEvent, { kind: 'dispute_opened' | 'dispute_closed' }>): Promise<Outcome> {
  if (event.kind === 'dispute_closed' && !event.won) return 'ignored';
  const { paymentIntentId } = event;
  if (paymentIntentId === null) return refused(event, 'unknown_top_up');
  const topUp = await topUpOfPayment(deps, paymentIntentId);
  if (!topUp) return refused(event, 'unknown_top_up');
  await creditBeforeDebit(deps, topUp, paymentIntentId);
  const opening: LedgerEntry = {
    account_id: topUp.account_id,
    entry_id: `dispute#${event.disputeId}`,
    kind: 'dispute',
    amount: -centsToMicros(event.amountCents + event.feeCents),
    description: 'Card payment disputed (amount and fee)',
    created_at: deps.clock.now().toISOString(),
  };
  const booked = event.kind === 'dispute_opened' ? await recordLedgerEntry(deps, opening) : await returnDisputed(deps, opening);
  await applyBalanceRules(deps, topUp.account_id);
  return booked ? 'applied' : 'duplicate';
}

/** Credits back what a dispute's opening took (booking the opening first when it is missing). */
async function returnDisputed(deps: Deps, opening: LedgerEntry): Promise<boolean> {
  const openingOf = () => getLedgerEntry(deps, opening.account_id, opening.entry_id);
  const taken = (await openingOf()) ?? ((await recordLedgerEntry(deps, opening)) ? opening : await openingOf());
  if (!taken) throw new DependencyTransientError(`the opening of ${opening.entry_id} was neither found nor booked`);
  return recordLedgerEntry(deps, {
    ...opening,
    entry_id: `dispute-won#${opening.entry_id.slice('dispute#'.length)}`,
    amount: -taken.amount,
    description: 'Dispute won: amount and fee returned',
  });
}

async function applyPaymentEvent(deps: Deps, event: PaymentEvent): Promise<Outcome> {
  switch (event.kind) {
    case 'checkout_paid':
    case 'payment_succeeded':
      return creditPayment(deps, event);
    case 'checkout_closed': {
      const topUp = await topUpNamed(deps, event.tags.topUpId);
      if (!topUp || topUp.account_id !== event.tags.accountId) return refused(event, 'unknown_top_up');
      return (await closeTopUp(deps, topUp.top_up_id, event.outcome, event.outcome === 'failed' ? 'The payment failed.' : null))
        ? 'applied'
        : 'duplicate';
    }
    case 'payment_failed': {
      const topUp = await topUpNamed(deps, event.tags.topUpId);
      if (!topUp || topUp.account_id !== event.tags.accountId) return refused(event, 'unknown_top_up');
      if (topUp.kind !== 'auto_recharge') return 'ignored';
      await recordRechargeFailure(deps, topUp.account_id, topUp.top_up_id, event.reason);
      return 'applied';
    }
    case 'refunded':
      return debitRefund(deps, event);
    case 'dispute_opened':
    case 'dispute_closed':
      return settleDispute(deps, event);
    case 'ignored':
      return 'ignored';
  }
}

const INVALID_SIGNATURE = 'Invalid signature';

/** The refusal of a webhook whose signature does not hold. */
export const isInvalidSignature = (error: unknown): error is Failure => error instanceof Failure && error.message === INVALID_SIGNATURE;

/** A webhook has this long to arrive before the reconciler asks the provider itself. */
const WEBHOOK_GRACE_MS = 2 * 60_000;
/** A top-up whose checkout never opened (the provider was unreachable) is closed after this. */
const UNOPENED_CHECKOUT_MS = 60 * 60_000;
const OPEN_TOP_UPS_PER_RUN = 200;

export interface TopUpReconciliation {
  readonly checked: number;
  /** Paid at the provider but not yet credited here: credited now. */
  readonly credited: number;
  readonly closed: number;
  /** How long the oldest of those had been open, in ms (0 when none): webhooks are not arriving. */
  readonly oldestUncreditedMs: number;
}

/**
 * A checkout whose opening timed out may exist at the provider, payable: asked again under the same key, the
 * provider answers with it (or opens it now), and it is attached, so the top-up shows it and its payment credits.
 */
async function attachLostCheckout(deps: Deps, topUp: TopUp): Promise<void> {
  const account = await getAccount(deps, topUp.account_id);
  if (!account) return;
  const checkout = await openCheckout(deps, account, topUp).catch((error: unknown) => refusedCheckout(deps, topUp, error));
  if (await attachCheckout(deps, topUp.top_up_id, checkout))
    logger.warn('a checkout whose opening timed out was found and attached', { top_up_id: topUp.top_up_id });
}

/**
 * The backstop for lost or late webhooks: every top-up still open after the webhook's grace is looked up at the
 * provider, and what the provider says is applied exactly as its event would be (the same keyed credit, so a webhook
 * arriving afterwards changes nothing). A paid one found here means webhooks are failing: its age is the metric the
 * alarm watches.
 */
export async function reconcileTopUps(deps: Deps): Promise<TopUpReconciliation> {
  const nowMs = deps.clock.now().getTime();
  const open = await listOpenTopUps(deps, new Date(nowMs - WEBHOOK_GRACE_MS).toISOString(), OPEN_TOP_UPS_PER_RUN);
  let credited = 0;
  let closed = 0;
  let oldestUncreditedMs = 0;
  for (const topUp of open) {
    try {
      const providerId = topUp.provider_session_id ?? topUp.payment_intent_id;
      if (providerId === null) {
        if (nowMs - Date.parse(topUp.created_at) > UNOPENED_CHECKOUT_MS) {
          if (await closeTopUp(deps, topUp.top_up_id, 'failed', 'The checkout could not be opened.')) closed += 1;
        } else if (topUp.kind === 'checkout') await attachLostCheckout(deps, topUp);
        continue;
      }
      const event = topUp.provider_session_id ? await deps.payments.checkoutNow(providerId) : await deps.payments.paymentNow(providerId);
      const outcome = await applyPaymentEvent(deps, event);
      if (outcome !== 'applied') continue;
      if (event.kind === 'checkout_paid' || event.kind === 'payment_succeeded') {
        credited += 1;
        oldestUncreditedMs = Math.max(oldestUncreditedMs, nowMs - Date.parse(topUp.created_at));
        logger.warn('a paid top-up was credited by the reconciler: its webhook did not arrive', { top_up_id: topUp.top_up_id });
      } else closed += 1;
    } catch (error) {
      // One the provider cannot answer for now is looked at again next run.
      logger.error('could not reconcile a top-up', { top_up_id: topUp.top_up_id, error });
    }
  }
  durationMetric(metricNames.uncreditedPaymentAge, oldestUncreditedMs);
  const report = { checked: open.length, credited, closed, oldestUncreditedMs };
  logger.info('top-ups reconciled', { ...report });
  return report;
}

/**
 * The provider's webhook: the signature over the raw body is checked first (400 and nothing done when it does not
 * hold), an event already handled is answered at once, and every other one is applied, each money movement keyed by
 * the provider's own ids in a conditional write, so a replay, a reordering or two deliveries at once move money once.
 * A failure answers 5xx, so that the provider delivers the event again.
 */
export async function receivePaymentWebhook(deps: Deps, rawBody: string, signature: string | undefined): Promise<WebhookReceipt> {
  let event: PaymentEvent;
  try {
    event = await deps.payments.verifiedEvent(rawBody, signature, deps.clock.now().getTime());
  } catch (error) {
    if (error instanceof PaymentSignatureError) {
      countMetric(metricNames.paymentWebhookFailures);
      throw badRequest(INVALID_SIGNATURE);
    }
    throw error;
  }
  if (await paymentEventSeen(deps, event.eventId)) return { received: true, outcome: 'duplicate' };
  const outcome = await applyPaymentEvent(deps, event);
  await rememberPaymentEvent(deps, event.eventId, outcome);
  logger.info('payment event', { event_id: event.eventId, kind: event.kind, outcome });
  return { received: true, outcome };
}
