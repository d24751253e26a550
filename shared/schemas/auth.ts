import * as z from '../model/zod';
import { ledgerKindSchema } from '../model/ledger';
import { serviceEventSchema } from './events';
import { timestampSchema } from './timestamps';

const PASSWORD_MIN = 10;
const PASSWORD_MAX = 128;

/** Addresses are kept in one form, so `Ann@Example.com` and `ann@example.com` are one login. */
const emailSchema = z
  // A missing address is reported as every missing field is ("email is required").
  .email({ error: (issue) => (issue.input === undefined ? undefined : 'email must be an e-mail address') })
  .max(254)
  .transform((email) => email.toLowerCase());

const newPasswordSchema = z
  .string()
  .min(PASSWORD_MIN, { error: `password must be at least ${PASSWORD_MIN} characters` })
  .max(PASSWORD_MAX)
  .meta({ description: `${PASSWORD_MIN} to ${PASSWORD_MAX} characters.` });

const linkTokenSchema = z.string().min(1).max(100).meta({ description: 'The token from the e-mailed link.' });

export const signUpBodySchema = z.strictObject({ email: emailSchema, password: newPasswordSchema });
export type SignUpBody = z.infer<typeof signUpBodySchema>;

export const signInBodySchema = z.strictObject({ email: emailSchema, password: z.string().min(1).max(PASSWORD_MAX) });
export type SignInBody = z.infer<typeof signInBodySchema>;

export const forgotPasswordBodySchema = z.strictObject({ email: emailSchema });
export type ForgotPasswordBody = z.infer<typeof forgotPasswordBodySchema>;

/**
 * A console e-mail to prepare and send once the request that asked for it has been answered: whether the address is
 * registered decides what is written and sent, so none of that happens while the caller waits. A sign-up carries
 * the scrypt hash of its password, never the password.
 */
export const authMailRequestSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('sign-up'), email: z.string(), password_hash: z.string() }),
  z.strictObject({ kind: z.literal('reset'), email: z.string() }),
  // An account's own event (billing paused, the runway short), e-mailed to its address.
  z.strictObject({ kind: z.literal('account-notice'), event: serviceEventSchema }),
]);
export type AuthMailRequest = z.infer<typeof authMailRequestSchema>;

export const resetPasswordBodySchema = z.strictObject({ token: linkTokenSchema, password: newPasswordSchema });
export type ResetPasswordBody = z.infer<typeof resetPasswordBodySchema>;

export const confirmBodySchema = z.strictObject({
  token: linkTokenSchema,
  password: z.string().min(1).max(PASSWORD_MAX).meta({ description: 'The password chosen in the sign-up that sent the link.' }),
});
export type ConfirmBody = z.infer<typeof confirmBodySchema>;

/** The same answer whether or not the address is registered. */
export const acceptedSchema = z.strictObject({ ok: z.literal(true), message: z.string() });
export type Accepted = z.infer<typeof acceptedSchema>;

export const okSchema = z.strictObject({ ok: z.literal(true) });

export const sessionInfoSchema = z.strictObject({
  account_id: z.string(),
  email: z.string(),
  csrf_token: z.string().meta({ description: 'Send it as X-CSRFToken on POST and DELETE.' }),
  expires_at: timestampSchema.meta({ description: 'When the session ends; signing in again starts a new one.' }),
});

export const accountViewSchema = z.strictObject({
  account_id: z.string(),
  email: z.string(),
  confirmed: z.boolean(),
  billing_paused: z.boolean(),
  balance_usd: z.string(),
  balance_micros: z.number().int(),
  total_deposited_usd: z.string(),
  total_deposited_micros: z.number().int(),
  deposit_required: z
    .boolean()
    .meta({ description: 'True until $1 or more has been deposited in total: creating keys answers 402 until then.' }),
  created_at: timestampSchema,
});
export type AccountView = z.infer<typeof accountViewSchema>;

const ledgerEntryViewSchema = z.strictObject({
  created_at: timestampSchema,
  kind: ledgerKindSchema,
  amount_usd: z.string(),
  amount_micros: z.number().int(),
  instance_id: z.number().int().nullable(),
  description: z.string().nullable(),
});

export const accountActivitySchema = z.strictObject({
  entries: z.array(ledgerEntryViewSchema).meta({ description: 'The latest ledger entries, newest first (at most 100).' }),
  spending_by_day: z
    .array(z.strictObject({ date: z.iso.date(), amount_usd: z.string(), amount_micros: z.number().int() }))
    .meta({ description: 'Charges per UTC day over the last 30 days, oldest first, days without charges included.' }),
});
export type AccountActivity = z.infer<typeof accountActivitySchema>;
