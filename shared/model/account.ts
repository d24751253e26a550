import { forbidden, unauthorized, type Failure } from './errors';
/** Where an account stands for everything done with its credentials. */
export type AccountStanding = 'in-standing' | 'gone' | 'suspended' | 'unconfirmed';

/**
 * The one rule of standing, for API keys, sessions, sign-in and the re-check of a request in flight (the
 * transactions' condition, ACCOUNT_IN_STANDING in store/request-guard.ts, is the same rule in DynamoDB's words).
 * Strict: anything but an explicit `false` suspension or `true` confirmation does not stand.
 */
export function standingOf(
  account: { readonly deleted_at?: unknown; readonly suspended?: unknown; readonly confirmed?: unknown } | undefined,
): AccountStanding {
  if (!account || (account.deleted_at ?? null) !== null) return 'gone';
  if (account.suspended !== false) return 'suspended';
  if (account.confirmed !== true) return 'unconfirmed';
  return 'in-standing';
}

/**
 * Why a principal's account does not let it in, in the interface's order: gone (401, with the edge's own text), then
 * suspended, then unconfirmed (403); undefined when it stands.
 */
export function standingRefusal(
  account: Parameters<typeof standingOf>[0],
  goneText: 'API key owner not found' | 'Account not found',
): Failure | undefined {
  switch (standingOf(account)) {
    case 'gone':
      return unauthorized(goneText);
    case 'suspended':
      return forbidden('Account suspended');
    case 'unconfirmed':
      return forbidden('Account not confirmed');
    case 'in-standing':
      return undefined;
  }
}
