import * as z from '../model/zod';
import { timestampSchema } from './timestamps';
import {
  balanceNoticeSchema,
  TOP_UP_MAX_USD,
  TOP_UP_MIN_USD,
  TOP_UP_PRESETS_USD,
  topUpAmountSchema,
  topUpKindSchema,
  topUpStatusSchema,
} from '../model/payments';

const usd = (description: string) => z.string().meta({ description: `${description}, in dollars and cents ("20.00").` });

export const createTopUpBodySchema = z.strictObject({
  amount_usd: topUpAmountSchema('amount_usd').meta({
    description: `Dollars to add, with at most two decimals: at least ${TOP_UP_MIN_USD}, at most ${TOP_UP_MAX_USD}.`,
  }),
  save_card: z.boolean().optional().meta({ description: 'Keep the card with the payment provider for auto-recharge (default false).' }),
});
export type CreateTopUpBody = z.infer<typeof createTopUpBodySchema>;

export const topUpSchema = z.strictObject({
  top_up_id: z.string().meta({ description: 'The top-up (`tu_…`).' }),
  kind: topUpKindSchema.meta({ description: '`checkout`: paid on the checkout page; `auto_recharge`: charged to the saved card.' }),
  status: topUpStatusSchema.meta({
    description:
      '`open` until the provider reports the payment: `paid` once the balance is credited (only ever from the provider’s signed event, never from the return page), `expired` when the checkout closed unpaid, `failed` when the payment failed.',
  }),
  amount_usd: usd('What the top-up adds'),
  checkout_url: z.string().nullable().meta({ description: 'The provider’s hosted checkout page; open it to pay. Null for auto-recharge.' }),
  provider_session_id: z.string().nullable().meta({ description: 'The provider’s checkout session (`cs_…`).' }),
  created_at: timestampSchema,
  expires_at: timestampSchema.nullable().meta({ description: 'When the checkout page closes unpaid.' }),
  paid_at: timestampSchema.nullable(),
  refunded_usd: usd('What the provider has refunded of it since (debited from the balance)'),
  failure_reason: z.string().nullable(),
});
export type TopUpView = z.infer<typeof topUpSchema>;

/**
 * A charge must lift a balance at the threshold above it, or the customer's money would run out with auto-recharge on
 * (each crossing is charged once): so, when on, the amount is at least the threshold.
 */
export const autoRechargeBodySchema = z
  .strictObject({
    enabled: z.boolean(),
    threshold_usd: z
      .number({ error: (issue) => (issue.input === undefined ? 'threshold_usd is required' : 'threshold_usd must be a number of dollars') })
      .min(0, { error: 'threshold_usd must be at least 0' })
      .max(TOP_UP_MAX_USD, { error: `threshold_usd must be at most ${TOP_UP_MAX_USD}` })
      .meta({ description: 'Charge the saved card when the balance falls to this many dollars or below.' }),
    amount_usd: topUpAmountSchema('amount_usd').meta({
      description: `Dollars to add each time the balance falls to the threshold: at least ${TOP_UP_MIN_USD}, at most ${TOP_UP_MAX_USD}, and, when \`enabled\`, at least \`threshold_usd\`, so that one charge lifts the balance above the threshold.`,
    }),
  })
  .refine((body) => !body.enabled || body.amount_usd >= body.threshold_usd, {
    error: 'amount_usd must be at least threshold_usd',
    path: ['amount_usd'],
  });
export type AutoRechargeBody = z.infer<typeof autoRechargeBodySchema>;

const autoRechargeViewSchema = z.strictObject({
  enabled: z.boolean(),
  threshold_usd: z.string(),
  amount_usd: z.string(),
  failures: z.number().int().meta({ description: 'Failed attempts in a row; at 3 auto-recharge turns itself off.' }),
  disabled_reason: z.string().nullable(),
});

export const billingSchema = z.strictObject({
  balance_usd: usd('The balance now'),
  balance_micros: z.number().int(),
  total_deposited_usd: usd('Everything ever added (top-ups and deposits)'),
  deposit_met: z.boolean().meta({ description: 'Whether $1 or more was ever deposited: creating API keys needs it.' }),
  billing_paused: z.boolean().meta({ description: 'True while the balance is at or below zero: running servers are powered off.' }),
  burn_rate_usd_per_hour: usd('What the servers cost an hour as they are now (running 100 %, stopped 25 %)'),
  burn_rate_micros_per_hour: z.number().int(),
  runway_hours: z.number().nullable().meta({ description: 'Hours the balance lasts at the burn rate; null when nothing is billed.' }),
  exhausts_at: timestampSchema
    .nullable()
    .meta({ description: 'When the balance reaches zero at the burn rate; null when nothing is billed.' }),
  balance_notice: balanceNoticeSchema.meta({ description: 'The runway warning in force: under 24 hours, under 1 hour, or none.' }),
  saved_card: z.boolean().meta({ description: 'Whether a card is saved for auto-recharge.' }),
  auto_recharge: autoRechargeViewSchema.nullable(),
  top_ups: z.array(topUpSchema).meta({ description: 'The latest top-ups, newest first (at most 10).' }),
  top_up_limits: z.strictObject({
    min_usd: z.number(),
    max_usd: z.number(),
    presets_usd: z.array(z.number()),
  }),
});
export type BillingView = z.infer<typeof billingSchema>;

export const TOP_UP_LIMITS = { min_usd: TOP_UP_MIN_USD, max_usd: TOP_UP_MAX_USD, presets_usd: [...TOP_UP_PRESETS_USD] };

export const webhookReceiptSchema = z.strictObject({
  received: z.literal(true),
  outcome: z.enum(['applied', 'duplicate', 'ignored', 'refused']).meta({
    description: '`refused`: the event names a top-up that does not exist or does not match it (counted, nothing credited).',
  }),
});
export type WebhookReceipt = z.infer<typeof webhookReceiptSchema>;
