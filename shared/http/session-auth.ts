import type { Deps } from '../domain/deps';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { constantTimeEqual, sha256Hex } from '../model/crypto';
import { forbidden, unauthorized } from '../model/errors';
import { getAccount, type Account } from '../store/accounts';
import { getSession, type Session } from '../store/sessions';
import { NEGATIVE_CACHE_TTL_MS, unknownCredentials } from './flood-guard';
import { SESSION_COOKIE } from './cookies';
import { csrfTokenFor } from '../domain/accounts';
import { standingRefusal } from '../model/account';

export interface SessionPrincipal {
  readonly account: Account;
  readonly session: Session;
  /** The session's CSRF token, for the signed-in page to fetch again. */
  readonly csrfToken: string;
}

export const csrfFailed = () => forbidden('CSRF validation failed');

export function sessionTokenOf(event: APIGatewayProxyEventV2): string | undefined {
  for (const cookie of event.cookies ?? []) {
    const separator = cookie.indexOf('=');
    if (separator > 0 && cookie.slice(0, separator).trim() === SESSION_COOKIE) return cookie.slice(separator + 1).trim();
  }
  return undefined;
}

/**
 * A state-changing request from another site is refused before its token is even looked at. Same origin means the
 * API's own host, or one of the configured origins of the service's web pages.
 */
export function isCrossSite(deps: Deps, event: APIGatewayProxyEventV2): boolean {
  const origin = event.headers.origin;
  if (origin !== undefined && deps.config.trustedOrigins.includes(origin)) return false;
  if (event.headers['sec-fetch-site'] === 'cross-site') return true;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== event.headers.host;
  } catch {
    return true;
  }
}

/**
 * Key management is for a signed-in browser: the `session` cookie, and for POST and DELETE the session's
 * synchronizer token in X-CSRFToken (compared in constant time) from a same-site page. A Bearer key is never
 * accepted here. Then the account's standing, as the authentication table says. `alongside` runs once the session
 * is found, in the same round trip as the account's read (the session's rate limit), and its result comes back
 * with the principal.
 */
export async function authenticateSession<T>(
  deps: Deps,
  event: APIGatewayProxyEventV2,
  requireCsrf: boolean,
  alongside: (session: Session) => Promise<T>,
  now = deps.clock.now(),
): Promise<[SessionPrincipal, T]> {
  const token = sessionTokenOf(event);
  if (!token) {
    throw unauthorized(
      event.headers.authorization ? 'API keys are not accepted here: key management needs a session cookie' : 'Missing session cookie',
    );
  }
  // As with API keys: a session just found unknown or expired is refused again for a few seconds without a read.
  const tokenHash = sha256Hex(token);
  if (unknownCredentials.of(deps).has(`session#${tokenHash}`, now.getTime())) throw unauthorized('Invalid or expired session');
  const session = await getSession(deps, tokenHash);
  if (!session || session.expires_at * 1000 <= now.getTime()) {
    unknownCredentials.of(deps).set(`session#${tokenHash}`, now.getTime() + NEGATIVE_CACHE_TTL_MS);
    throw unauthorized('Invalid or expired session');
  }
  if (requireCsrf) {
    const csrfToken = event.headers['x-csrftoken'];
    if (isCrossSite(deps, event) || !csrfToken || !constantTimeEqual(sha256Hex(csrfToken), session.csrf_hash)) throw csrfFailed();
  }
  const [account, besides] = await Promise.all([getAccount(deps, session.account_id), alongside(session)]);
  // A session from before the latest change of password is as good as signed out.
  if (account && session.password_version !== account.password_version) {
    unknownCredentials.of(deps).set(`session#${tokenHash}`, now.getTime() + NEGATIVE_CACHE_TTL_MS);
    throw unauthorized('Invalid or expired session');
  }
  const refusal = standingRefusal(account, 'Account not found');
  if (refusal || !account) throw refusal ?? unauthorized('Account not found');
  return [{ account, session, csrfToken: csrfTokenFor(token) }, besides];
}
