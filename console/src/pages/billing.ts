import { ApiError, call, type Session } from '../api';
import { field, h, notice, show } from '../dom';
import { go, type Route } from '../main';
import { noticeText } from '../notices';

/**
 * Billing: the balance, what the servers cost an hour and how long the money lasts, and "Add funds": a preset or a
 * custom amount opens the payment provider's checkout page. Coming back from it (`#/billing?top_up=tu_…`), the page
 * waits for the provider to confirm the payment to the service; the balance is never credited from the return alone.
 */
interface TopUp {
  readonly top_up_id: string;
  readonly kind: string;
  readonly status: 'open' | 'paid' | 'expired' | 'failed';
  readonly amount_usd: string;
  readonly checkout_url: string | null;
  readonly created_at: string;
  readonly refunded_usd: string;
}

export interface Billing {
  readonly balance_usd: string;
  readonly billing_paused: boolean;
  readonly burn_rate_usd_per_hour: string;
  readonly runway_hours: number | null;
  readonly exhausts_at: string | null;
  readonly balance_notice: 'none' | 'below_24h' | 'below_1h';
  readonly top_ups: TopUp[];
  readonly top_up_limits: { min_usd: number; max_usd: number; presets_usd: number[] };
}

const STATUS_LABEL: Record<TopUp['status'], string> = { open: 'Awaiting payment', paid: 'Paid', expired: 'Expired', failed: 'Failed' };

/** How long the money lasts, in words. */
export function runwayText(billing: Billing): string {
  if (billing.runway_hours === null) return 'Nothing is billed now.';
  const hours = billing.runway_hours;
  const span =
    hours >= 48
      ? `${Math.floor(hours / 24)} days`
      : hours >= 1
        ? `${Math.floor(hours)} hours`
        : `${Math.max(1, Math.round(hours * 60))} minutes`;
  return `About ${span} at $${billing.burn_rate_usd_per_hour} an hour (until ${new Date(billing.exhausts_at ?? '').toLocaleString()}).`;
}

/** The warning every signed-in page shows while the money is running out, or billing is paused. */
export function lowBalanceBanner(billing: Billing): HTMLElement | null {
  if (billing.billing_paused)
    return notice(
      'error',
      'Billing is paused: the balance is used up and servers are powered off. ',
      h('a', { href: '#/billing' }, 'Add funds'),
      ' to power them on again.',
    );
  if (billing.balance_notice === 'none') return null;
  return notice(
    'error',
    `The balance runs out in ${billing.balance_notice === 'below_1h' ? 'less than an hour' : 'less than a day'}; then servers are powered off. `,
    h('a', { href: '#/billing' }, 'Add funds'),
    '.',
  );
}

async function startTopUp(amount: number): Promise<void> {
  const topUp = await call<TopUp>('POST', 'billing/top-ups', { amount_usd: amount });
  if (topUp.checkout_url) location.assign(topUp.checkout_url);
}

function explain(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return 'The service could not be reached. Please try again.';
}

function addFunds(limits: Billing['top_up_limits']): HTMLElement {
  const status = h('div', { class: 'form-status' });
  const pay = (amount: number) => (event: Event) => {
    event.preventDefault();
    status.replaceChildren(notice('info', 'Opening the payment page…'));
    startTopUp(amount).catch((error: unknown) => status.replaceChildren(notice('error', explain(error))));
  };
  const amount = h('input', {
    name: 'amount',
    type: 'number',
    inputmode: 'decimal',
    min: String(limits.min_usd),
    max: String(limits.max_usd),
    step: '0.01',
    required: true,
  });
  const custom = h(
    'form',
    { class: 'inline-form' },
    field('Amount in dollars', amount, `From $${limits.min_usd} to $${limits.max_usd}.`),
    h('button', { type: 'submit' }, 'Add funds'),
    status,
  );
  custom.addEventListener('submit', (event) => pay(Number(amount.value))(event));
  return h(
    'section',
    { 'aria-labelledby': 'add-funds-heading' },
    h('h2', { id: 'add-funds-heading' }, 'Add funds'),
    h('p', {}, 'Pay by card on the payment provider’s page; the balance rises as soon as the payment is confirmed.'),
    h(
      'div',
      { class: 'presets' },
      ...limits.presets_usd.map((preset) => h('button', { type: 'button', class: 'preset', onclick: pay(preset) }, `$${preset}`)),
    ),
    custom,
  );
}

/** Back from the checkout page: waits (a minute at most) for the provider's confirmation to credit the balance. */
async function awaitCredit(topUpId: string, status: HTMLElement): Promise<void> {
  for (let i = 0; i < 60; i++) {
    const topUp = await call<TopUp>('GET', `billing/top-ups/${encodeURIComponent(topUpId)}`);
    if (topUp.status === 'paid') {
      return go('billing', 'funds-added');
    }
    if (topUp.status !== 'open') {
      status.replaceChildren(
        notice('error', `The top-up ${topUp.status === 'expired' ? 'expired unpaid' : 'failed'}; nothing was charged.`),
      );
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  status.replaceChildren(notice('info', 'The payment is not confirmed yet. This page shows it once it is; you can leave it.'));
}

function topUpsTable(topUps: readonly TopUp[]): HTMLElement {
  if (topUps.length === 0) return h('p', {}, 'No top-ups yet.');
  return h(
    'div',
    { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': 'Top-ups' },
    h(
      'table',
      { class: 'compact' },
      h('thead', {}, h('tr', {}, ...['When', 'Amount', 'Status'].map((title) => h('th', { scope: 'col' }, title)))),
      h(
        'tbody',
        {},
        ...topUps.map((topUp) =>
          h(
            'tr',
            {},
            h('td', {}, new Date(topUp.created_at).toLocaleString()),
            h('td', { class: 'amount' }, `$${topUp.amount_usd}`, topUp.refunded_usd !== '0.00' ? ` ($${topUp.refunded_usd} refunded)` : ''),
            h('td', {}, topUp.kind === 'auto_recharge' ? `${STATUS_LABEL[topUp.status]} (auto-recharge)` : STATUS_LABEL[topUp.status]),
          ),
        ),
      ),
    ),
  );
}

export async function billingPage(_session: Session, route: Route): Promise<void> {
  let billing: Billing;
  try {
    billing = await call<Billing>('GET', 'billing');
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) go('sign-in', 'session-ended');
    throw error;
  }
  const returning = route.params.get('top_up');
  const arrival = noticeText(route.params);
  const status = h('div', { class: 'form-status', id: 'top-up-status' }, arrival ? notice('success', arrival) : null);
  show(
    h('h1', {}, 'Billing'),
    lowBalanceBanner(billing),
    status,
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Balance'),
      h('dd', { id: 'balance' }, `$${billing.balance_usd}`),
      h('dt', {}, 'Servers cost'),
      h('dd', {}, `$${billing.burn_rate_usd_per_hour} an hour`),
      h('dt', {}, 'The balance lasts'),
      h('dd', { id: 'runway' }, runwayText(billing)),
    ),
    addFunds(billing.top_up_limits),
    h(
      'section',
      { 'aria-labelledby': 'top-ups-heading' },
      h('h2', { id: 'top-ups-heading' }, 'Recent top-ups'),
      topUpsTable(billing.top_ups),
    ),
  );
  if (returning) {
    status.replaceChildren(notice('info', 'Waiting for the payment to be confirmed…'));
    await awaitCredit(returning, status);
  }
}
