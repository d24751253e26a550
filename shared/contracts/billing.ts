import * as z from '../model/zod';
import { autoRechargeBodySchema, billingSchema, createTopUpBodySchema, topUpSchema, webhookReceiptSchema } from '../schemas/billing';
import { TOP_UP_MAX_USD, TOP_UP_MIN_USD } from '../model/payments';
import type { AccountRoute, PublicRoute, SessionRoute } from './contract';
import { accountErrors, error, failedAuthenticationLimited, ok, rateLimitHeaders, sessionErrors, tooLarge } from './docs';

/**
 * The account's money: its balance and runway, card top-ups through the payment provider's hosted checkout, and the
 * provider's webhook that credits them. The account routes take an API key or the console's session; auto-recharge,
 * which has the service charge the saved card later, only the session (a person's decision, as key management is).
 */

const tags = ['billing'];
const TopUp = topUpSchema.meta({ id: 'TopUp' });
const Billing = billingSchema.meta({ id: 'Billing' });
const headers = rateLimitHeaders(false);
const billingPath = '/api/v1/billing';
const topUpsPath = `${billingPath}/top-ups`;

const topUpsAccess = { tables: { topUps: ['PutItem', 'UpdateItem', 'GetItem'] }, payments: true } as const;

export const getBillingRoute = {
  name: 'GetBilling',
  method: 'GET',
  path: billingPath,
  entry: 'functions/api/get-billing.ts',
  auth: 'account',
  csrf: false,
  access: { tables: { topUps: ['Query', 'BatchGetItem'] } },
  doc: {
    operationId: 'getBilling',
    summary: 'The balance, the burn rate, how long the money lasts, and the latest top-ups',
    description:
      'The balance and the total ever added; whether $1 was ever deposited (keys need it) and whether billing is paused; the burn rate of the servers as they are now (running at 100 % of their hourly price, stopped at 25 %) and the runway at that rate (`runway_hours`, `exhausts_at`; null when nothing is billed); the runway warning in force; auto-recharge; the latest 10 top-ups. With an API key or the console session.',
    tags,
    responses: { 200: ok('The account’s billing.', Billing, headers), ...accountErrors([401, 403]) },
  },
} as const satisfies AccountRoute;

export const createTopUpRoute = {
  name: 'CreateTopUp',
  method: 'POST',
  path: topUpsPath,
  entry: 'functions/api/create-top-up.ts',
  auth: 'account',
  csrf: true,
  body: createTopUpBodySchema,
  timeoutSeconds: 15,
  access: topUpsAccess,
  doc: {
    operationId: 'createTopUp',
    summary: 'Add funds by card: opens the payment provider’s checkout page for the amount',
    description: `Opens a checkout on the payment provider’s hosted page for \`amount_usd\` (at least ${TOP_UP_MIN_USD}, at most ${TOP_UP_MAX_USD}, whole cents) and answers with its \`checkout_url\`: open it, pay, and the balance is credited when the provider confirms the payment to the service (a few seconds), never from the page’s redirect. Poll \`GET ${topUpsPath}/{top_up_id}\` until \`status\` is \`paid\`. A checkout left unpaid expires after an hour. \`save_card\` keeps the card for auto-recharge.`,
    tags,
    responses: {
      201: ok('The top-up, open.', TopUp, headers),
      ...accountErrors([400, 401, 403], {
        400: `Invalid request: amount_usd must be at least ${TOP_UP_MIN_USD}, at most ${TOP_UP_MAX_USD}, with at most two decimals.`,
        413: tooLarge,
        502: 'The payment provider refused the checkout: the top-up is closed as failed.',
        503: 'Payments are unavailable: the payment provider refused to open the checkout now; the top-up is closed as failed, try again later.',
      }),
    },
  },
} as const satisfies AccountRoute;

export const getTopUpRoute = {
  name: 'GetTopUp',
  method: 'GET',
  path: `${topUpsPath}/{top_up_id}`,
  entry: 'functions/api/get-top-up.ts',
  auth: 'account',
  csrf: false,
  params: z.object({ top_up_id: z.string().meta({ description: 'The top-up (`tu_…`).' }) }),
  access: { tables: { topUps: ['GetItem'] } },
  doc: {
    operationId: 'getTopUp',
    summary: 'One top-up: open, paid (credited), expired or failed',
    description: '`paid` means the balance has been credited. Another account’s top-up is 404, like a missing one.',
    tags,
    responses: {
      200: ok('The top-up.', TopUp, headers),
      ...accountErrors([401, 403, 404], { 404: 'Top-up not found (missing, or owned by someone else).' }),
    },
  },
} as const satisfies AccountRoute;

export const setAutoRechargeRoute = {
  name: 'SetAutoRecharge',
  method: 'POST',
  path: `${billingPath}/auto-recharge`,
  entry: 'functions/api/set-auto-recharge.ts',
  auth: 'session',
  csrf: true,
  body: autoRechargeBodySchema,
  timeoutSeconds: 15,
  access: {
    // The review of the account's checkpoint (warnings, the statement, the next review), an auto-recharge top-up, and
    // the billing answered (the latest top-ups); the e-mail that tells the account of the change.
    tables: {
      accounts: ['GetItem', 'UpdateItem'],
      ledger: ['PutItem'],
      topUps: ['Query', 'BatchGetItem', 'GetItem', 'PutItem', 'UpdateItem'],
    },
    payments: true,
    sendsMail: true,
  },
  doc: {
    operationId: 'setAutoRecharge',
    summary: 'Turn auto-recharge on or off: charge the saved card when the balance falls to a threshold',
    description:
      'When on, the saved card is charged `amount_usd` once each time the balance falls to `threshold_usd` or below (checked as the balance reaches it, and at once when turned on; the next charge only after the balance has been above the threshold again, or the charge failed); the credit arrives like any top-up’s. When on, `amount_usd` must be at least `threshold_usd`. After 3 failed charges in a row it turns itself off, says why in `auto_recharge.disabled_reason`, and the account gets an `account.auto_recharge_disabled` event and e-mail. Needs a card saved by a top-up made with `save_card`. Off by default. Only with the console’s session and its CSRF token (an API key is refused, as on key management), and every change is e-mailed to the account’s address.',
    tags,
    responses: {
      200: ok('The account’s billing, as it is now.', Billing),
      400: error('Invalid request: amount_usd must be at least threshold_usd (when enabled), and each within its limits.'),
      ...sessionErrors,
      409: error('No saved card: add funds once with `save_card` first.'),
      413: error(tooLarge),
    },
  },
} as const satisfies SessionRoute;

/** The provider's own retries make up for a refusal here; its source addresses are few and known. */
const PAYMENT_WEBHOOK_THROTTLE = { rateLimit: 50, burstLimit: 100 } as const;

export const paymentWebhookRoute = {
  name: 'PaymentWebhook',
  method: 'POST',
  path: `${billingPath}/stripe/webhook`,
  entry: 'functions/api/payment-webhook.ts',
  auth: 'none',
  throttle: PAYMENT_WEBHOOK_THROTTLE,
  timeoutSeconds: 15,
  // A credit (a ledger Put, the account's Update, the top-up's Update), a debit the same (a won dispute reads what its
  // opening took), and what either leads to:
  // the billing pause (the account, its live instances and a power-off of each running one: a job, its workflow, the
  // upstream's power call) or the runway's review (the instances, a notice flag, an auto-recharge top-up).
  access: {
    tables: {
      topUps: ['GetItem', 'UpdateItem', 'PutItem', 'Query', 'BatchGetItem'],
      ledger: ['PutItem', 'GetItem'],
      accounts: ['GetItem', 'UpdateItem', 'ConditionCheckItem'],
      counters: ['GetItem', 'PutItem', 'UpdateItem'],
      instances: ['Query', 'BatchGetItem', 'GetItem', 'UpdateItem'],
      jobs: ['GetItem', 'PutItem', 'UpdateItem'],
    },
    payments: true,
    upstream: true,
    startsWorkflows: ['power'],
  },
  doc: {
    operationId: 'receivePaymentEvent',
    summary: 'The payment provider’s events (Stripe webhooks); not for customers',
    description:
      'Verifies the `Stripe-Signature` header over the raw body (HMAC-SHA256, timestamp within 5 minutes either way; a source address whose signatures fail too often gets 429 for a while), then applies the event once: a paid checkout credits its top-up, a refund or a dispute debits, a won dispute credits back. Every movement is keyed by the provider’s own ids in a conditional write, so replays, reordering and concurrent deliveries move money once. An event for a top-up the service does not have, or that does not match it, is refused (200, `refused`, counted). Any failure answers 5xx so that the provider delivers again.',
    tags,
    responses: {
      200: ok('Received.', webhookReceiptSchema),
      400: error('Invalid signature.'),
      429: failedAuthenticationLimited,
      500: error('Internal server error: the provider delivers the event again.'),
      503: error('A dependency is briefly unavailable: the provider delivers the event again.'),
    },
  },
} as const satisfies PublicRoute;

export const billingRoutes = [getBillingRoute, createTopUpRoute, getTopUpRoute, setAutoRechargeRoute, paymentWebhookRoute] as const;
