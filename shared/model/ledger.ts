import * as z from './zod';

/**
 * The kinds of money movement on an account's ledger. `deposit`: an operator's; `top_up`: a payment by the customer,
 * credited from the provider's event; `refund` and `dispute`: money the provider took back (a won dispute gives it
 * back); `charge`: an operator's debit; `meter`: what servers cost.
 */
export const ledgerKindSchema = z.enum(['deposit', 'top_up', 'refund', 'dispute', 'charge', 'meter']);
