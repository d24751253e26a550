import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { ApiError, call, type Session } from '../api';
import { h, show } from '../dom';
import { go } from '../main';
import { depositExplanation, type AccountView } from './deposit';
import { lowBalanceBanner, runwayText, type Billing } from './billing';

interface Activity {
  readonly entries: { created_at: string; kind: string; amount_usd: string; instance_id: number | null; description: string | null }[];
  readonly spending_by_day: { date: string; amount_micros: number; amount_usd: string }[];
}

const KIND_LABEL: Record<string, string> = {
  deposit: 'Deposit by an operator',
  top_up: 'Card top-up',
  refund: 'Refund',
  dispute: 'Dispute',
  charge: 'Charge',
  meter: 'Usage',
};

/** Spending per day as bars; the table beside it carries the same figures for screen readers. */
const chartWidth = () => Math.min(720, (document.getElementById('main')?.clientWidth ?? 320) - 32);

function spendingChart(days: Activity['spending_by_day']): HTMLElement {
  const container = h('div', { class: 'chart', 'aria-hidden': 'true' });
  const x = days.map((day) => Date.parse(`${day.date}T00:00:00Z`) / 1000);
  const y = days.map((day) => day.amount_micros / 1_000_000);
  const bars = uPlot.paths.bars?.({ size: [0.7, 40] });
  const chart = new uPlot(
    {
      width: chartWidth(),
      height: 220,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [{ stroke: '#333' }, { stroke: '#333', values: (_u, ticks) => ticks.map((tick) => `$${tick.toFixed(2)}`), size: 60 }],
      series: [{}, { label: 'Spent', fill: '#2563eb', stroke: '#1d4ed8', paths: bars, points: { show: false } }],
    },
    [x, y],
    container,
  );
  // Follows the page's width (a phone turned sideways, a resized window).
  const main = document.getElementById('main');
  if (main) {
    const observer = new ResizeObserver(() =>
      container.isConnected ? chart.setSize({ width: chartWidth(), height: 220 }) : observer.disconnect(),
    );
    observer.observe(main);
  }
  return container;
}

export async function accountPage(_session: Session): Promise<void> {
  let account: AccountView;
  let activity: Activity;
  let billing: Billing;
  try {
    [account, activity, billing] = await Promise.all([
      call<AccountView>('GET', 'account'),
      call<Activity>('GET', 'account/activity'),
      call<Billing>('GET', 'billing'),
    ]);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) go('sign-in', 'session-ended');
    throw error;
  }
  const total = activity.spending_by_day.reduce((sum, day) => sum + day.amount_micros, 0);
  show(
    h('h1', {}, 'Account'),
    lowBalanceBanner(billing),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'E-mail address'),
      h(
        'dd',
        {},
        account.email,
        ' ',
        account.confirmed
          ? h('span', { class: 'badge badge-active' }, 'Confirmed')
          : h('span', { class: 'badge badge-revoked' }, 'Not confirmed'),
      ),
      h('dt', {}, 'Account id'),
      h('dd', {}, h('code', {}, account.account_id)),
      h('dt', {}, 'Balance'),
      h(
        'dd',
        {},
        `$${account.balance_usd}`,
        account.billing_paused
          ? h('span', { class: 'badge badge-revoked' }, 'Billing paused: servers are powered off until funds are added')
          : null,
        ' ',
        h('a', { href: '#/billing' }, 'Add funds'),
      ),
      h('dt', {}, 'The balance lasts'),
      h('dd', {}, runwayText(billing)),
      h('dt', {}, 'Deposited in total'),
      h('dd', {}, `$${account.total_deposited_usd}`),
    ),
    account.deposit_required ? depositExplanation(account) : null,
    h(
      'section',
      { 'aria-labelledby': 'spending-heading' },
      h('h2', { id: 'spending-heading' }, 'Spending per day, last 30 days'),
      h('p', {}, `$${(total / 1_000_000).toFixed(2)} in the last 30 days.`),
      spendingChart(activity.spending_by_day),
      h(
        'details',
        {},
        h('summary', {}, 'Spending per day as a table'),
        h(
          'div',
          { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': 'Spending per day' },
          h(
            'table',
            {},
            h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Day'), h('th', { scope: 'col' }, 'Spent'))),
            h('tbody', {}, ...activity.spending_by_day.map((day) => h('tr', {}, h('td', {}, day.date), h('td', {}, `$${day.amount_usd}`)))),
          ),
        ),
      ),
    ),
    h(
      'section',
      { 'aria-labelledby': 'ledger-heading' },
      h('h2', { id: 'ledger-heading' }, 'Ledger'),
      activity.entries.length
        ? h(
            'div',
            { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': 'Ledger entries' },
            h(
              'table',
              {},
              h('thead', {}, h('tr', {}, ...['When', 'What', 'Amount', 'Instance'].map((title) => h('th', { scope: 'col' }, title)))),
              h(
                'tbody',
                {},
                ...activity.entries.map((entry) =>
                  h(
                    'tr',
                    {},
                    h('td', {}, new Date(entry.created_at).toLocaleString()),
                    h('td', {}, entry.description ?? KIND_LABEL[entry.kind] ?? entry.kind),
                    h(
                      'td',
                      { class: 'amount' },
                      entry.amount_usd.startsWith('-') ? `-$${entry.amount_usd.slice(1)}` : `$${entry.amount_usd}`,
                    ),
                    h('td', {}, entry.instance_id === null ? '—' : String(entry.instance_id)),
                  ),
                ),
              ),
            ),
          )
        : h('p', {}, 'No entries yet.'),
    ),
  );
}
