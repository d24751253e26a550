import { runtimeSlot, type Platform } from '../platform';
import { loadSecretsManager } from '../aws';
import type StripeClient from 'stripe';
import * as z from '../model/zod';
import { onFirstUse } from '../model/first-use';
import type { PaymentEvent, PaymentTags } from '../model/payments';
import { DependencyTransientError } from '../transient-errors';
import { logger } from '../observability';
import { PaymentRefusedError, PaymentSignatureError, type PaymentProvider, type SavedCardOutcome } from './provider';

/**
 * The payment provider on Stripe, through the official `stripe` package. Its API base comes from the configuration
 * (Stripe's own on AWS; the local simulator through the client's host, port and protocol settings), its secret key
 * and webhook secret from the configuration locally and from Secrets Manager on AWS. The package loads on first use:
 * most functions never pay anyone.
 */
interface StripeSecrets {
  readonly secretKey: string;
  readonly webhookSecret: string;
}

async function readSecrets(deps: Platform): Promise<StripeSecrets> {
  const { secretKey, webhookSecret, secretArn } = deps.config.payments;
  if (secretKey && webhookSecret) return { secretKey, webhookSecret };
  if (!secretArn) throw new Error('payments are not configured: neither STRIPE_SECRET_KEY nor PAYMENTS_SECRET_ARN is set');
  const { GetSecretValueCommand, SecretsManagerClient } = await loadSecretsManager();
  const { SecretString } = await new SecretsManagerClient({ region: deps.config.region }).send(
    new GetSecretValueCommand({ SecretId: secretArn }),
  );
  const parsed = z.object({ secret_key: z.string().min(1), webhook_secret: z.string().min(1) }).parse(JSON.parse(SecretString ?? '{}'));
  return { secretKey: parsed.secret_key, webhookSecret: parsed.webhook_secret };
}

interface Loaded {
  readonly stripe: StripeClient;
  readonly webhookSecret: string;
}

/** The runtime's Stripe client, made once (a failed start is tried again). */
const client = /* @__PURE__ */ runtimeSlot((): { loaded?: Promise<Loaded> } => ({}));

function stripeOf(deps: Platform): Promise<Loaded> {
  const state = client.of(deps);
  if (state.loaded) return state.loaded;
  const loading = Promise.all([import('stripe'), readSecrets(deps)]).then(([{ default: Stripe }, secrets]) => {
    const base = deps.config.payments.apiBase ? new URL(deps.config.payments.apiBase) : undefined;
    const stripe = new Stripe(secrets.secretKey, {
      maxNetworkRetries: 2,
      timeout: deps.config.payments.timeoutMs,
      telemetry: false,
      ...(base
        ? {
            host: base.hostname,
            port: Number(base.port || (base.protocol === 'https:' ? 443 : 80)),
            protocol: base.protocol.replace(':', '') as 'http' | 'https',
          }
        : {}),
    });
    return { stripe, webhookSecret: secrets.webhookSecret };
  });
  state.loaded = loading;
  loading.catch(() => {
    if (state.loaded === loading) state.loaded = undefined;
  });
  return loading;
}

/** The package's objects as plain JSON values (its maps have no prototype, which the schemas would not read as records). */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;

/** Stripe's failures that say "not now" (connection, rate limit, its own 5xx) become the service's transient error. */
function transientOr(error: unknown): unknown {
  const failure = error as { type?: string; statusCode?: number; message?: string };
  const transient =
    failure.type === 'StripeConnectionError' ||
    failure.type === 'StripeRateLimitError' ||
    failure.type === 'StripeAPIError' ||
    (typeof failure.statusCode === 'number' && failure.statusCode >= 500);
  return transient ? new DependencyTransientError(`payment provider: ${failure.message ?? 'unavailable'}`) : error;
}

/** Statuses with which the provider says it did nothing and will not serve us now (our key, its limits, its outage). */
const UNAVAILABLE_STATUSES = new Set([401, 403, 429, 503]);

/**
 * A failure to open a checkout: refused for sure when the provider answered so (nothing was opened), else transient
 * with an unknown outcome (a timeout or another 5xx: the checkout may exist, and the same key finds it again).
 */
function checkoutFailure(error: unknown): unknown {
  const { statusCode, message } = error as { statusCode?: number; message?: string };
  if (typeof statusCode === 'number' && UNAVAILABLE_STATUSES.has(statusCode))
    return new PaymentRefusedError('unavailable', `payment provider: ${statusCode} ${message ?? ''}`);
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500)
    return new PaymentRefusedError('invalid', `payment provider: ${statusCode} ${message ?? ''}`);
  return transientOr(error);
}

/** The provider's objects as the service reads them, built on the first event or payment read. */
const schemas = /* @__PURE__ */ onFirstUse(() => {
  const tagsSchema = z
    .record(z.string(), z.string())
    .nullish()
    .transform((metadata): PaymentTags => ({ accountId: metadata?.account_id, topUpId: metadata?.top_up_id }));
  const idOf = z.union([z.string(), z.object({ id: z.string() }).transform((object) => object.id)]);

  const sessionSchema = z.object({
    id: z.string().startsWith('cs_'),
    status: z.string().nullish(),
    amount_total: z.number().int().nonnegative(),
    payment_status: z.string(),
    payment_intent: idOf.nullish(),
    metadata: tagsSchema,
  });
  const intentSchema = z.object({
    id: z.string().startsWith('pi_'),
    status: z.string().optional(),
    amount_received: z.number().int().nonnegative().optional(),
    amount: z.number().int().nonnegative(),
    metadata: tagsSchema,
    last_payment_error: z.object({ message: z.string().optional() }).nullish(),
  });
  const chargeSchema = z.object({
    id: z.string().startsWith('ch_'),
    // A charge made without a PaymentIntent (not one of ours) has none.
    payment_intent: idOf.nullish(),
    amount_refunded: z.number().int().nonnegative(),
  });
  const disputeSchema = z.object({
    id: z.string().startsWith('dp_'),
    payment_intent: idOf.nullish(),
    amount: z.number().int().nonnegative(),
    status: z.string(),
    balance_transactions: z.array(z.object({ fee: z.number().int().nonnegative() })).default([]),
  });
  const envelopeSchema = z.object({ id: z.string().startsWith('evt_'), type: z.string(), data: z.object({ object: z.unknown() }) });
  return { tagsSchema, sessionSchema, intentSchema, chargeSchema, disputeSchema, envelopeSchema };
});

/** The event as the service understands it; anything it does not act on is `ignored`. */
export function understoodEvent(event: { id: string; type: string; data: { object: unknown } }): PaymentEvent {
  const object = event.data.object;
  const eventId = event.id;
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      const session = schemas().sessionSchema.parse(object);
      // A completed checkout whose payment is still on its way (a bank debit) is credited by the later event.
      if (session.payment_status !== 'paid') return { kind: 'ignored', eventId, type: `${event.type} (${session.payment_status})` };
      return {
        kind: 'checkout_paid',
        eventId,
        sessionId: session.id,
        paymentIntentId: session.payment_intent ?? null,
        amountCents: session.amount_total,
        tags: session.metadata,
      };
    }
    case 'checkout.session.expired':
    case 'checkout.session.async_payment_failed': {
      const session = schemas().sessionSchema.parse(object);
      const outcome = event.type === 'checkout.session.expired' ? 'expired' : 'failed';
      return { kind: 'checkout_closed', eventId, sessionId: session.id, outcome, tags: session.metadata };
    }
    case 'payment_intent.succeeded': {
      const intent = schemas().intentSchema.parse(object);
      return {
        kind: 'payment_succeeded',
        eventId,
        paymentIntentId: intent.id,
        amountCents: intent.amount_received ?? intent.amount,
        tags: intent.metadata,
      };
    }
    case 'payment_intent.payment_failed': {
      const intent = schemas().intentSchema.parse(object);
      const reason = intent.last_payment_error?.message ?? 'The payment failed.';
      return { kind: 'payment_failed', eventId, paymentIntentId: intent.id, reason, tags: intent.metadata };
    }
    case 'charge.refunded': {
      const charge = schemas().chargeSchema.parse(object);
      return {
        kind: 'refunded',
        eventId,
        chargeId: charge.id,
        paymentIntentId: charge.payment_intent ?? null,
        refundedCents: charge.amount_refunded,
      };
    }
    case 'charge.dispute.created':
    case 'charge.dispute.closed': {
      const dispute = schemas().disputeSchema.parse(object);
      return {
        kind: event.type === 'charge.dispute.created' ? 'dispute_opened' : 'dispute_closed',
        eventId,
        disputeId: dispute.id,
        paymentIntentId: dispute.payment_intent ?? null,
        amountCents: dispute.amount,
        feeCents: dispute.balance_transactions.reduce((sum, transaction) => sum + transaction.fee, 0),
        won: dispute.status === 'won',
      };
    }
    default:
      return { kind: 'ignored', eventId, type: event.type };
  }
}

/**
 * The time a `Stripe-Signature` header was signed at, read as the package reads it (items split at commas, key `t`);
 * none unless there is exactly one: the package honours the last, and a check of another would let a header with a
 * current and a future timestamp through.
 */
function signedAt(header: string): number | undefined {
  const stamps = header
    .split(',')
    .map((item) => item.split('='))
    .filter(([key]) => key === 't');
  const value = stamps.length === 1 ? stamps[0]![1] : undefined;
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}

export function stripeProvider(deps: Platform): PaymentProvider {
  const tolerance = deps.config.payments.signatureToleranceSeconds;
  return {
    async startCheckout(request) {
      const { stripe } = await stripeOf(deps);
      const metadata = { account_id: request.accountId, top_up_id: request.topUpId };
      const expiresAt = Math.floor(Date.parse(request.openedAt) / 1000) + deps.config.payments.checkoutMinutes * 60;
      try {
        const session = await stripe.checkout.sessions.create(
          {
            mode: 'payment',
            line_items: [
              { quantity: 1, price_data: { currency: 'usd', unit_amount: request.amountCents, product_data: { name: 'Account credit' } } },
            ],
            client_reference_id: request.topUpId,
            metadata,
            payment_intent_data: { metadata, ...(request.saveCard ? { setup_future_usage: 'off_session' as const } : {}) },
            ...(request.customerId
              ? { customer: request.customerId }
              : { customer_email: request.email, customer_creation: 'always' as const }),
            success_url: `${request.returnUrl}${request.returnUrl.includes('?') ? '&' : '?'}session_id={CHECKOUT_SESSION_ID}`,
            cancel_url: request.returnUrl,
            expires_at: expiresAt,
          },
          // Our top-up's id: a retry after a lost answer gets the same session, never a second one.
          { idempotencyKey: `checkout-${request.topUpId}` },
        );
        if (!session.url) throw new Error('the provider returned a checkout without a page');
        return { sessionId: session.id, url: session.url, expiresAt: new Date(session.expires_at * 1000).toISOString() };
      } catch (error) {
        throw checkoutFailure(error);
      }
    },

    async chargeSavedCard(charge): Promise<SavedCardOutcome> {
      const { stripe } = await stripeOf(deps);
      const metadata = { account_id: charge.accountId, top_up_id: charge.topUpId };
      try {
        const intent = await stripe.paymentIntents.create(
          {
            amount: charge.amountCents,
            currency: 'usd',
            customer: charge.customerId,
            payment_method: charge.paymentMethodId,
            off_session: true,
            confirm: true,
            metadata,
          },
          { idempotencyKey: `recharge-${charge.topUpId}` },
        );
        return { outcome: intent.status === 'succeeded' ? 'succeeded' : 'processing', paymentIntentId: intent.id };
      } catch (error) {
        const failure = error as { type?: string; message?: string; raw?: { payment_intent?: { id?: string } } };
        if (failure.type === 'StripeCardError' || failure.type === 'StripeInvalidRequestError')
          return { outcome: 'declined', paymentIntentId: failure.raw?.payment_intent?.id ?? null, reason: failure.message ?? 'declined' };
        throw transientOr(error);
      }
    },

    async paymentFacts(paymentIntentId) {
      const { stripe } = await stripeOf(deps);
      try {
        const intent = await stripe.paymentIntents.retrieve(paymentIntentId);
        const customer = intent.customer;
        const method = intent.payment_method;
        return {
          tags: schemas().tagsSchema.parse(intent.metadata),
          customerId: typeof customer === 'string' ? customer : (customer?.id ?? null),
          paymentMethodId: typeof method === 'string' ? method : (method?.id ?? null),
        };
      } catch (error) {
        if ((error as { statusCode?: number }).statusCode === 404) return undefined;
        throw transientOr(error);
      }
    },

    async checkoutNow(sessionId) {
      const { stripe } = await stripeOf(deps);
      try {
        // The provider's object as it sent it, for understoodEvent to read as it reads an event's.
        const object = plain(await stripe.checkout.sessions.retrieve(sessionId));
        const { status } = schemas().sessionSchema.parse(object);
        const type = status === 'expired' ? 'checkout.session.expired' : status === 'complete' ? 'checkout.session.completed' : 'open';
        return understoodEvent({ id: `reconciled:${sessionId}`, type, data: { object } });
      } catch (error) {
        throw transientOr(error);
      }
    },

    async paymentNow(paymentIntentId) {
      const { stripe } = await stripeOf(deps);
      try {
        const object = plain(await stripe.paymentIntents.retrieve(paymentIntentId));
        const { status } = schemas().intentSchema.parse(object);
        const failed = status === 'canceled' || status === 'requires_payment_method';
        const type = status === 'succeeded' ? 'payment_intent.succeeded' : failed ? 'payment_intent.payment_failed' : 'open';
        return understoodEvent({ id: `reconciled:${paymentIntentId}`, type, data: { object } });
      } catch (error) {
        throw transientOr(error);
      }
    },

    async verifiedEvent(rawBody, signature, receivedAtMs) {
      const { stripe, webhookSecret } = await stripeOf(deps);
      if (!signature) throw new PaymentSignatureError('no Stripe-Signature header');
      // The package refuses a signature older than the tolerance; one dated too far ahead is refused here too.
      const stamp = signedAt(signature);
      if (stamp === undefined || Math.abs(receivedAtMs / 1000 - stamp) > tolerance)
        throw new PaymentSignatureError('the signature is outside the tolerance window');
      let event: unknown;
      try {
        event = stripe.webhooks.constructEvent(rawBody, signature, webhookSecret, tolerance, undefined, receivedAtMs);
      } catch (error) {
        logger.warn('a payment webhook failed its signature check', { reason: (error as Error).message });
        throw new PaymentSignatureError('the signature does not match');
      }
      return understoodEvent(schemas().envelopeSchema.parse(event));
    },
  };
}
