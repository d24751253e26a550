import type { Deps } from './deps';
import type { Account } from '../store/accounts';
import { listLedgerEntries } from '../store/ledger';
import type { AccountActivity, AccountView } from '../schemas/auth';
import { microsToUsd } from './accounts';
import { balanceAt } from '../model/burn';
import { KEY_DEPOSIT_MIN_MICROS } from './key-management';

/** What the console's account page shows: standing, balance and the deposits that unlock key creation. */
export function accountView(account: Account, nowMs: number): AccountView {
  const balance = balanceAt(account, nowMs);
  return {
    account_id: account.account_id,
    email: account.email,
    confirmed: account.confirmed,
    billing_paused: account.billing_paused,
    balance_usd: microsToUsd(balance),
    balance_micros: balance,
    total_deposited_usd: microsToUsd(account.total_deposited),
    total_deposited_micros: account.total_deposited,
    deposit_required: account.total_deposited < KEY_DEPOSIT_MIN_MICROS,
    created_at: account.created_at,
  };
}

const RECENT_ENTRIES = 100;
const SPENDING_DAYS = 30;
const DAY_MS = 86_400_000;

/** The latest ledger entries and the charges per UTC day over the last 30 days (today included). */
export async function accountActivity(deps: Deps, accountId: string, now = deps.clock.now()): Promise<AccountActivity> {
  const entries = (await listLedgerEntries(deps, accountId)).sort((a, b) => b.created_at.localeCompare(a.created_at));
  const today = Math.floor(now.getTime() / DAY_MS);
  const days = Array.from({ length: SPENDING_DAYS }, (_, i) =>
    new Date((today - SPENDING_DAYS + 1 + i) * DAY_MS).toISOString().slice(0, 10),
  );
  const spent = new Map(days.map((day) => [day, 0]));
  for (const entry of entries) {
    const day = entry.created_at.slice(0, 10);
    if (entry.amount < 0 && spent.has(day)) spent.set(day, (spent.get(day) ?? 0) - entry.amount);
  }
  return {
    entries: entries.slice(0, RECENT_ENTRIES).map((entry) => ({
      created_at: entry.created_at,
      kind: entry.kind,
      amount_usd: microsToUsd(entry.amount),
      amount_micros: entry.amount,
      instance_id: entry.instance_id ?? null,
      description: entry.description ?? null,
    })),
    spending_by_day: days.map((date) => ({ date, amount_usd: microsToUsd(spent.get(date) ?? 0), amount_micros: spent.get(date) ?? 0 })),
  };
}
