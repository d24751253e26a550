/**
 * Prepaid funding, as pure rules: what a top-up may be, what a payment provider's event means for the account, how
 * long the money lasts, and when the customer is warned. Money is integer micro-dollars here as everywhere; the
 * provider counts in cents.
 */
import * as z from './zod';
import { sha256Hex } from './crypto';

/** Card fees make tiny top-ups costly (at 2.9 % + $0.30 a $5 top-up loses 8.9 %): $5 is the least. */
export const TOP_UP_MIN_USD = 5;
/** The most one top-up may add; more is several top-ups (or an operator's deposit). */
export const TOP_UP_MAX_USD = 1000;
/** The amounts the console offers. */
export const TOP_UP_PRESETS_USD = [10, 20, 50, 100] as const;

const MICROS_PER_CENT = 10_000;
export const centsToMicros = (cents: number) => cents * MICROS_PER_CENT;

/** Dollars with at most two decimals, as a whole number of cents. */
export function usdToCents(usd: number): number {
  return Math.round(usd * 100);
}

/** An amount in dollars for the provider to charge: whole cents, within what one top-up may be. */
export const topUpAmountSchema = (field: string) =>
  z
    .number({ error: (issue) => (issue.input === undefined ? `${field} is required` : `${field} must be a number of dollars`) })
    .min(TOP_UP_MIN_USD, { error: `${field} must be at least ${TOP_UP_MIN_USD}` })
    .max(TOP_UP_MAX_USD, { error: `${field} must be at most ${TOP_UP_MAX_USD}` })
    .refine((usd) => Math.abs(usd * 100 - Math.round(usd * 100)) < 1e-6, { error: `${field} has at most two decimals` });

const topUpStatuses = ['open', 'paid', 'expired', 'failed'] as const;
export const topUpStatusSchema = z.enum(topUpStatuses);

/** How the money was asked for: the customer on the provider's checkout page, or their saved card by auto-recharge. */
export const topUpKindSchema = z.enum(['checkout', 'auto_recharge']);

/**
 * What the service tells the provider about a payment and reads back from its events: whose it is and which top-up
 * it pays. It is never trusted alone: the top-up it names must agree (account, amount, provider ids).
 */
export interface PaymentTags {
  readonly accountId: string | undefined;
  readonly topUpId: string | undefined;
}

/**
 * A provider's event, as the service understands it (the adapter turns the provider's objects into these). Every
 * kind carries the provider's own ids, which key the ledger entries it leads to.
 */
export type PaymentEvent =
  | {
      readonly kind: 'checkout_paid';
      readonly eventId: string;
      readonly sessionId: string;
      readonly paymentIntentId: string | null;
      readonly amountCents: number;
      readonly tags: PaymentTags;
    }
  | {
      readonly kind: 'checkout_closed';
      readonly eventId: string;
      readonly sessionId: string;
      readonly outcome: 'expired' | 'failed';
      readonly tags: PaymentTags;
    }
  | {
      readonly kind: 'payment_succeeded';
      readonly eventId: string;
      readonly paymentIntentId: string;
      readonly amountCents: number;
      readonly tags: PaymentTags;
    }
  | {
      readonly kind: 'payment_failed';
      readonly eventId: string;
      readonly paymentIntentId: string;
      readonly reason: string;
      readonly tags: PaymentTags;
    }
  | {
      readonly kind: 'refunded';
      readonly eventId: string;
      readonly chargeId: string;
      /** Null for a charge made without a PaymentIntent: not a payment of ours. */
      readonly paymentIntentId: string | null;
      /** Everything refunded on the charge so far: events may come in any order, the largest is the truth. */
      readonly refundedCents: number;
    }
  | {
      readonly kind: 'dispute_opened' | 'dispute_closed';
      readonly eventId: string;
      readonly disputeId: string;
      readonly paymentIntentId: string | null;
      readonly amountCents: number;
      readonly feeCents: number;
      /** For a closed dispute: whether it was won (the money comes back). */
      readonly won: boolean;
    }
  | { readonly kind: 'ignored'; readonly eventId: string; readonly type: string };

/** What the service knows of a top-up when an event about it arrives. */
export interface TopUpFacts {
  readonly account_id: string;
  readonly amount_cents: number;
  readonly provider_session_id: string | null;
  readonly payment_intent_id: string | null;
}

/** Why a payment event was not applied: it names a top-up we do not have, or one that does not match it. */
export type PaymentRefusal = 'unknown_top_up' | 'other_account' | 'other_amount' | 'other_payment';

/** Whether a paid checkout or an off-session payment may credit this top-up: it must be the one the provider paid. */
export function creditRefusal(
  topUp: TopUpFacts | undefined,
  paid: { readonly tags: PaymentTags; readonly amountCents: number; readonly sessionId?: string; readonly paymentIntentId: string | null },
): PaymentRefusal | undefined {
  if (!topUp) return 'unknown_top_up';
  if (paid.tags.accountId !== topUp.account_id) return 'other_account';
  if (paid.amountCents !== topUp.amount_cents) return 'other_amount';
  if (paid.sessionId !== undefined && topUp.provider_session_id !== null && paid.sessionId !== topUp.provider_session_id)
    return 'other_payment';
  if (paid.sessionId === undefined && topUp.payment_intent_id !== null && paid.paymentIntentId !== topUp.payment_intent_id)
    return 'other_payment';
  return undefined;
}

/** The ledger entry of a credit: one per provider payment, whatever the event that reports it and however often. */
export const creditEntryId = (event: { readonly sessionId?: string; readonly paymentIntentId: string | null }) =>
  event.sessionId !== undefined ? `top-up#${event.sessionId}` : `top-up#${event.paymentIntentId}`;

const HOUR_MS = 3_600_000;

export interface Runway {
  /** Whole and fractional hours the balance lasts at the current burn rate; null when nothing is billed. */
  readonly hours: number | null;
  readonly exhaustsAt: string | null;
}

/** How long the balance lasts at a burn rate (micro-dollars an hour); an empty balance has none left. */
export function runwayOf(balanceMicros: number, burnMicrosPerHour: number, now: Date): Runway {
  if (burnMicrosPerHour <= 0) return { hours: null, exhaustsAt: null };
  const hours = Math.max(0, balanceMicros) / burnMicrosPerHour;
  return { hours, exhaustsAt: new Date(now.getTime() + Math.round(hours * HOUR_MS)).toISOString() };
}

/** The warnings a customer gets as the runway shortens, each once per crossing. */
export const balanceNoticeSchema = z.enum(['none', 'below_24h', 'below_1h']);
export type BalanceNotice = z.infer<typeof balanceNoticeSchema>;

/** The warning level a runway is at: under 1 hour, under 24 hours, or none (also when nothing is billed). */
export function noticeLevelOf(runway: Runway): BalanceNotice {
  if (runway.hours === null) return 'none';
  if (runway.hours < 1) return 'below_1h';
  if (runway.hours < 24) return 'below_24h';
  return 'none';
}

const noticeRank: Record<BalanceNotice, number> = { none: 0, below_24h: 1, below_1h: 2 };

/**
 * The level to record: a deeper level is warned about (once: the level is recorded with the warning); a runway that
 * grew again (a top-up, servers stopped) lowers it, so the next crossing warns again.
 */
export function nextNotice(recorded: BalanceNotice, now: BalanceNotice): { readonly record: BalanceNotice; readonly warn: boolean } {
  if (noticeRank[now] > noticeRank[recorded]) return { record: now, warn: true };
  return { record: now, warn: false };
}

/** After this many failed attempts in a row auto-recharge turns itself off, and the customer is told. */
export const AUTO_RECHARGE_MAX_FAILURES = 3;

export const autoRechargeSchema = z.object({
  enabled: z.boolean(),
  threshold_micros: z.number().int().nonnegative(),
  amount_micros: z.number().int().positive(),
  /** Failed attempts in a row; a success sets it back to 0. */
  failures: z.number().int().nonnegative(),
  /** Why it was last turned off by the service, for the customer. */
  disabled_reason: z.string().nullable(),
});
export type AutoRecharge = z.infer<typeof autoRechargeSchema>;

/** Whether auto-recharge should charge the saved card now: on, a card saved, and the balance at or under the threshold. */
export function rechargeDue(settings: AutoRecharge | undefined, hasSavedCard: boolean, balanceMicros: number): boolean {
  return settings !== undefined && settings.enabled && hasSavedCard && balanceMicros <= settings.threshold_micros;
}

/**
 * Auto-recharge charges once per crossing of its threshold. The account counts the crossings it has claimed
 * (`recharge_crossing`, moved by a conditional write that only one claimant wins) and keeps, while the last one is
 * open, when it was claimed (`recharge_open_since`). A crossing ends when a review finds the balance above the
 * threshold again (credited), or when its charge failed; only then may the next one be claimed.
 */
export interface RechargeFacts {
  readonly settings: AutoRecharge | undefined;
  readonly hasSavedCard: boolean;
  readonly balanceMicros: number;
  /** Crossings claimed so far: the open one, if any, is the last. */
  readonly crossing: number;
  /** When the open crossing was claimed; undefined when none is open. */
  readonly openSince: string | undefined;
}

export type RechargePlan =
  | { readonly kind: 'none' }
  /** Claim crossing `crossing` (on condition the count is still `crossing - 1` and none is open), then charge it. */
  | { readonly kind: 'claim'; readonly crossing: number }
  /** Charge the open crossing again, with its own key: the provider answers with the charge it made, if it made one. */
  | { readonly kind: 'resume'; readonly crossing: number }
  /** The balance is above the threshold again: the open crossing is over. */
  | { readonly kind: 'end'; readonly crossing: number };

/**
 * A claimed crossing whose charge may not have reached the provider (its claimant died or timed out) is charged again
 * after this, which is longer than any one attempt takes (a route's budget is 15 s)...
 */
const RECHARGE_RESUME_AFTER_MS = 2 * 60_000;
/** ...and only while the provider still knows the key: Stripe keeps an idempotency key for 24 hours. */
const RECHARGE_RESUME_UNTIL_MS = 23 * 3_600_000;

/** What a review does about auto-recharge. */
export function rechargePlan(facts: RechargeFacts, nowMs: number): RechargePlan {
  const { settings, openSince, crossing } = facts;
  if (openSince !== undefined && (settings === undefined || facts.balanceMicros > settings.threshold_micros))
    return { kind: 'end', crossing };
  if (!rechargeDue(settings, facts.hasSavedCard, facts.balanceMicros)) return { kind: 'none' };
  if (openSince === undefined) return { kind: 'claim', crossing: crossing + 1 };
  const age = nowMs - Date.parse(openSince);
  return age >= RECHARGE_RESUME_AFTER_MS && age < RECHARGE_RESUME_UNTIL_MS ? { kind: 'resume', crossing } : { kind: 'none' };
}

/**
 * The top-up of an account's crossing, the same for every claimant and retry: the provider's idempotency key is made
 * from it, so however often the crossing is charged the provider makes one charge.
 */
export const rechargeTopUpId = (accountId: string, crossing: number) =>
  `tu_${sha256Hex(`auto-recharge#${accountId}#${crossing}`).slice(0, 32)}`;
