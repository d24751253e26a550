import type { PaymentEvent, PaymentTags } from '../model/payments';

/** A checkout to open on the provider's hosted page, for one top-up. */
interface CheckoutRequest {
  readonly topUpId: string;
  readonly accountId: string;
  readonly email: string;
  readonly amountCents: number;
  /** The customer the provider already knows for this account, so that a saved card stays theirs. */
  readonly customerId: string | null;
  /** Keep the card for later charges without the customer present (auto-recharge). */
  readonly saveCard: boolean;
  /** Where the provider's page sends the customer back; the credit never depends on it. */
  readonly returnUrl: string;
  /**
   * When the top-up was made: the checkout expires a fixed time after it, so that asking again under the same key
   * (after an answer that never came) is the very same request.
   */
  readonly openedAt: string;
}

interface Checkout {
  readonly sessionId: string;
  readonly url: string;
  readonly expiresAt: string;
}

/** A charge of a saved card without the customer (auto-recharge). */
interface SavedCardCharge {
  readonly topUpId: string;
  readonly accountId: string;
  readonly customerId: string;
  readonly paymentMethodId: string;
  readonly amountCents: number;
}

export type SavedCardOutcome =
  | { readonly outcome: 'succeeded' | 'processing'; readonly paymentIntentId: string }
  | { readonly outcome: 'declined'; readonly paymentIntentId: string | null; readonly reason: string };

/** What the provider says about one payment, read again when an event alone does not say whose it is. */
interface PaymentFacts {
  readonly tags: PaymentTags;
  readonly customerId: string | null;
  readonly paymentMethodId: string | null;
}

/** A webhook whose signature does not hold (forged, altered, too old or from the future): 400, and nothing done. */
export class PaymentSignatureError extends Error {}

/**
 * The provider answered that it did not do what it was asked, for sure (a 4xx, or a 503 that says it is unavailable):
 * `unavailable` when it will not serve us now (our key refused, rate limits, its outage), `invalid` when it refused
 * the request itself. A timeout or another 5xx is not one of these: what it was asked may have been done.
 */
export class PaymentRefusedError extends Error {
  constructor(
    readonly reason: 'unavailable' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The payment provider, as the service uses it: hosted checkouts for top-ups, charges of a saved card, a payment's
 * facts read again, and its signed events verified and understood. Stripe is the one adapter (shared/payments/stripe.ts).
 * Every call that creates something carries an idempotency key derived from our own ids, so a retry after a lost
 * answer creates nothing twice.
 */
export interface PaymentProvider {
  startCheckout(request: CheckoutRequest): Promise<Checkout>;
  chargeSavedCard(charge: SavedCardCharge): Promise<SavedCardOutcome>;
  paymentFacts(paymentIntentId: string): Promise<PaymentFacts | undefined>;
  /**
   * What the provider says of a checkout or a payment now, as the event that would report it (`ignored` while it is
   * still open): the reconciler's way to what a lost webhook would have said.
   */
  checkoutNow(sessionId: string): Promise<PaymentEvent>;
  paymentNow(paymentIntentId: string): Promise<PaymentEvent>;
  /** The event a webhook carries, once its signature over the raw body holds at `receivedAtMs`. */
  verifiedEvent(rawBody: string, signature: string | undefined, receivedAtMs: number): Promise<PaymentEvent>;
}
