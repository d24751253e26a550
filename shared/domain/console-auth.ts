import type { Deps } from './deps';
import { getAccount, type Account } from '../store/accounts';
import { consumeAuthToken, getAuthToken, insertAuthToken, type AuthTokenPurpose } from '../store/auth-tokens';
import { changePassword, getLogin, insertAccountWithLogin } from '../store/logins';
import { deleteAccountSessions, deleteSession } from '../store/sessions';
import type {
  Accepted,
  AuthMailRequest,
  ConfirmBody,
  ForgotPasswordBody,
  ResetPasswordBody,
  SignInBody,
  SignUpBody,
} from '../schemas/auth';
import { newAccountRecord, openSessionUnder, type IssuedSession } from './accounts';
import { standingOf } from '../model/account';
import { isAccountEvent, mailAccountNotice } from './account-notices';
import { limitMailsTo, limitSourceAddress, rememberSourceOf, reserveFailedSignIn } from './auth-limits';
import { randomBase62, sha256Hex } from '../model/crypto';
import { Failure, forbidden, unauthorized } from '../model/errors';
import { decoyPasswordHash, hashPassword, verifyPassword } from '../model/passwords';

/**
 * Self-service accounts for the console: sign-up with e-mail confirmation, sign-in and sign-out, and password reset
 * by e-mailed link. Answers that concern an address never say whether it is registered.
 */
const LINK_LIFETIME_SECONDS: Record<AuthTokenPurpose, number> = { confirm: 24 * 3600, reset: 3600 };
const LINK_PAGE: Record<AuthTokenPurpose, string> = { confirm: 'confirm', reset: 'reset' };

const invalidCredentials = () => unauthorized('Invalid e-mail or password');
const invalidLink = () => new Failure('invalid_request', 'Invalid or expired link');
const differentPassword = () => new Failure('invalid_request', 'This link belongs to a sign-up with a different password');

const SIGN_UP_ACCEPTED: Accepted = {
  ok: true,
  message: 'If the address can be used, a confirmation link is on its way to it.',
};
const RESET_ACCEPTED: Accepted = {
  ok: true,
  message: 'If an account uses this address, a link to reset its password is on its way to it.',
};

/** The purpose is part of the hash, so a reset token can never be spent as a confirmation, nor the other way. */
const tokenHash = (purpose: AuthTokenPurpose, token: string) => sha256Hex(`${purpose}:${token}`);

/**
 * A link into the console. The token rides in the fragment, which browsers never send to a server, so it stays
 * out of access logs and Referer headers. It holds only while the account stays at its current credential
 * generation; a confirmation link also carries the hash of the password chosen in the sign-up that sent it.
 */
async function mailLink(
  deps: Deps,
  account: Pick<Account, 'account_id' | 'email' | 'password_version'>,
  purpose: AuthTokenPurpose,
  now: Date,
  passwordHash?: string,
): Promise<void> {
  const token = randomBase62(43);
  await insertAuthToken(deps, {
    token_hash: tokenHash(purpose, token),
    purpose,
    account_id: account.account_id,
    email: account.email,
    created_at: now.toISOString(),
    expires_at: Math.floor(now.getTime() / 1000) + LINK_LIFETIME_SECONDS[purpose],
    password_version: account.password_version,
    ...(passwordHash === undefined ? {} : { password_hash: passwordHash }),
  });
  const link = `${deps.config.console.url}#/${LINK_PAGE[purpose]}?token=${token}`;
  const hours = LINK_LIFETIME_SECONDS[purpose] / 3600;
  await deps.mail.send(
    purpose === 'confirm'
      ? {
          to: account.email,
          subject: 'Confirm your e-mail address',
          text: `Open this link to confirm your address and finish signing up (it works once, within ${hours} hours):\n\n${link}\n\nIf you did not sign up, ignore this message.`,
        }
      : {
          to: account.email,
          subject: 'Reset your password',
          text: `Open this link to choose a new password (it works once, within ${hours} hour${hours === 1 ? '' : 's'}):\n\n${link}\n\nIf you did not ask for this, ignore this message: your password stays as it is.`,
        },
  );
}

/** Takes a link's token out for good: valid once, and only for its purpose and within its lifetime. */
async function spendLink(deps: Deps, purpose: AuthTokenPurpose, token: string, now: Date) {
  const spent = await consumeAuthToken(deps, tokenHash(purpose, token));
  if (!spent || spent.purpose !== purpose || spent.expires_at * 1000 <= now.getTime()) throw invalidLink();
  return spent;
}

/**
 * Answers at once, alike for every address: the same limits, the same scrypt work and one message queued. Whether
 * the address is taken decides only what the mail sender writes and sends afterwards.
 */
export async function signUp(
  deps: Deps,
  { email, password }: SignUpBody,
  sourceAddress: string,
  now = deps.clock.now(),
): Promise<Accepted> {
  await limitSourceAddress(deps, sourceAddress, now);
  await limitMailsTo(deps, email, sourceAddress, now);
  await deps.transports.authMail.send({ kind: 'sign-up', email, password_hash: await hashPassword(password) });
  return SIGN_UP_ACCEPTED;
}

/** Prepares and sends one queued console e-mail, after its request has been answered. */
export async function sendAuthMail(deps: Deps, request: AuthMailRequest, now = deps.clock.now()): Promise<void> {
  if (request.kind === 'reset') return mailResetLink(deps, request.email, now);
  if (request.kind === 'account-notice') return isAccountEvent(request.event) ? mailAccountNotice(deps, request.event) : undefined;
  const { email, password_hash: passwordHash } = request;
  const account = newAccountRecord({ email, confirmed: false, suspended: false });
  const at = now.toISOString();
  if (
    await insertAccountWithLogin(deps, account, {
      email,
      account_id: account.account_id,
      password_hash: passwordHash,
      created_at: at,
      password_changed_at: at,
      password_version: account.password_version,
    })
  ) {
    return mailLink(deps, account, 'confirm', now, passwordHash);
  }
  // Taken. While unconfirmed, a link of its own that confirms this sign-up's password, opened with that password:
  // whoever signed up first with someone else's address never chooses the password the mailbox's owner confirms.
  // Once confirmed, a note on how to get in.
  const login = await getLogin(deps, email);
  const existing = login && (await getAccount(deps, login.account_id));
  if (existing && existing.deleted_at === null && !existing.confirmed) await mailLink(deps, existing, 'confirm', now, passwordHash);
  else if (existing && existing.deleted_at === null) {
    await deps.mail.send({
      to: email,
      subject: 'You already have an account',
      text: `Someone, perhaps you, tried to sign up with this address, which already has an account.\n\nSign in at ${deps.config.console.url}#/sign-in, or reset your password at ${deps.config.console.url}#/forgot if you have forgotten it.`,
    });
  }
}

/**
 * Opening the link proves the mailbox, and giving the password chosen in the sign-up that sent it proves that
 * sign-up: only the two together confirm the account, with that password, so the owner who opens a link a stranger's
 * sign-up sent never confirms the stranger's password. A wrong password leaves the link as it was and counts as a
 * failed sign-in of the address from this source, so the link is no way round that limit. Confirming moves the
 * account to its next credential generation: every other link of the account stops working.
 */
export async function confirmEmail(
  deps: Deps,
  { token, password }: ConfirmBody,
  sourceAddress: string,
  now = deps.clock.now(),
): Promise<{ ok: true }> {
  await limitSourceAddress(deps, sourceAddress, now);
  const link = await getAuthToken(deps, tokenHash('confirm', token));
  // A link sent before links carried their password cannot say whose password it confirms.
  if (!link || link.purpose !== 'confirm' || link.expires_at * 1000 <= now.getTime() || link.password_hash === undefined) {
    throw invalidLink();
  }
  // Only a link of the account's current generation is checked against, so a worthless one cannot test passwords.
  const login = await getLogin(deps, link.email);
  if (login?.account_id !== link.account_id || login.password_version !== link.password_version) throw invalidLink();
  const attempt = await reserveFailedSignIn(deps, link.email, link.password_version, sourceAddress, now);
  if (!(await verifyPassword(password, link.password_hash))) throw differentPassword();
  await attempt.release();
  const spent = await spendLink(deps, 'confirm', token, now);
  const changed = await changePassword(deps, {
    accountId: spent.account_id,
    email: spent.email,
    passwordHash: link.password_hash,
    fromVersion: spent.password_version,
    changedAt: now.toISOString(),
  });
  if (!changed) throw invalidLink();
  return { ok: true };
}

export interface SignedIn extends IssuedSession {
  readonly account: Account;
}

/**
 * Checks the password (an unknown address costs the same scrypt work), within the limits per source address and
 * per e-mail and source address. A sign-in makes its source one of the address's known sources. Standing (suspended, unconfirmed) is told only once the password has been proven.
 * The session is opened under the credential generation the checked hash belongs to, so a password reset that
 * lands meanwhile leaves no session behind.
 */
export async function signIn(
  deps: Deps,
  { email, password }: SignInBody,
  sourceAddress: string,
  now = deps.clock.now(),
): Promise<SignedIn> {
  await limitSourceAddress(deps, sourceAddress, now);
  const login = await getLogin(deps, email);
  const passwordVersion = login?.password_version ?? 0;
  const attempt = await reserveFailedSignIn(deps, email, passwordVersion, sourceAddress, now);
  const passwordMatches = await verifyPassword(password, login?.password_hash ?? (await decoyPasswordHash()));
  const account = login && passwordMatches ? await getAccount(deps, login.account_id) : undefined;
  const standing = standingOf(account);
  if (!account || standing === 'gone') throw invalidCredentials();
  if (standing !== 'in-standing') {
    await attempt.release();
    if (standing === 'suspended') throw forbidden('Account suspended');
    throw forbidden('E-mail address not confirmed: open the link we sent, or sign up again for a new one');
  }
  const session = await openSessionUnder(deps, account.account_id, passwordVersion);
  // The password changed while it was being checked: it is no longer the password.
  if (!session) throw invalidCredentials();
  await attempt.release();
  await rememberSourceOf(deps, email, sourceAddress, now);
  return { ...session, account };
}

/** Ends the session on the server, so the cookie is worthless even if a copy of it survives. */
export async function signOut(deps: Deps, sessionHash: string): Promise<{ ok: true }> {
  await deleteSession(deps, sessionHash);
  return { ok: true };
}

/** Answers at once, alike for every address: the mail sender looks the address up afterwards. */
export async function requestPasswordReset(
  deps: Deps,
  { email }: ForgotPasswordBody,
  sourceAddress: string,
  now = deps.clock.now(),
): Promise<Accepted> {
  await limitSourceAddress(deps, sourceAddress, now);
  await limitMailsTo(deps, email, sourceAddress, now);
  await deps.transports.authMail.send({ kind: 'reset', email });
  return RESET_ACCEPTED;
}

async function mailResetLink(deps: Deps, email: string, now: Date): Promise<void> {
  const login = await getLogin(deps, email);
  const account = login && (await getAccount(deps, login.account_id));
  if (account && account.deleted_at === null) await mailLink(deps, account, 'reset', now);
}

/**
 * Sets the new password and moves the account to its next credential generation: every session and every other
 * link of the account stops working, wherever it was, and the failed sign-ins counted against the old password
 * no longer count. Opening the link also proves the address, so an unconfirmed account becomes confirmed.
 */
export async function resetPassword(
  deps: Deps,
  { token, password }: ResetPasswordBody,
  sourceAddress: string,
  now = deps.clock.now(),
): Promise<{ ok: true }> {
  await limitSourceAddress(deps, sourceAddress, now);
  const spent = await spendLink(deps, 'reset', token, now);
  const changed = await changePassword(deps, {
    accountId: spent.account_id,
    email: spent.email,
    passwordHash: await hashPassword(password),
    fromVersion: spent.password_version,
    changedAt: now.toISOString(),
  });
  if (!changed) throw invalidLink();
  // Refused by their generation already; this clears them out of the table.
  await deleteAccountSessions(deps, spent.account_id);
  return { ok: true };
}
