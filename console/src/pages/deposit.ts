import { h } from '../dom';

export interface AccountView {
  readonly account_id: string;
  readonly email: string;
  readonly confirmed: boolean;
  readonly billing_paused: boolean;
  readonly balance_usd: string;
  readonly total_deposited_usd: string;
  readonly deposit_required: boolean;
  readonly created_at: string;
}

/** Why key creation answers 402 "Deposit required", with the account's deposit state and the way to add funds. */
export function depositExplanation(account: AccountView): HTMLElement {
  return h(
    'section',
    { class: 'notice notice-info deposit', 'aria-labelledby': 'deposit-heading' },
    h('h2', { id: 'deposit-heading' }, 'Deposit required'),
    h(
      'p',
      {},
      'Creating API keys needs deposits of at least $1.00 in total. So far this account has deposited ',
      h('strong', {}, `$${account.total_deposited_usd}`),
      ` and its balance is $${account.balance_usd}.`,
    ),
    h(
      'p',
      {},
      h('a', { href: '#/billing', class: 'button-link' }, 'Add funds'),
      ' by card; keys can be created as soon as the payment is confirmed.',
    ),
  );
}
