import {
  acceptedSchema,
  accountActivitySchema,
  accountViewSchema,
  confirmBodySchema,
  forgotPasswordBodySchema,
  okSchema,
  resetPasswordBodySchema,
  sessionInfoSchema,
  signInBodySchema,
  signUpBodySchema,
} from '../schemas/auth';
import type { FunctionAccess } from '../access';
import type { AccountRoute, PublicRoute, SessionRoute } from './contract';
import { accountErrors, error, header, ok, publicFormErrors, requestIdHeader, sessionErrors, signOutErrors } from './docs';

/**
 * The console's routes: self-service sign-up and sign-in under /api/v1/auth, and the account's own figures for
 * its pages. Same pipeline as every other route; the public ones carry their own brute-force limits.
 */

/**
 * The brute-force windows, and the marks of the sources an address has signed in from: read to let a known source
 * past a window that strangers filled, and to give an attempt back.
 */
const limits = { counters: ['GetItem', 'UpdateItem'] } as const satisfies FunctionAccess['tables'];

/** The gateway's own ceiling on each public sign-in route, below the stage default: guessing stays slow for everyone. */
const AUTH_ROUTE_THROTTLE = { rateLimit: 10, burstLimit: 20 } as const;

const tags = ['console'];
const setCookie = {
  ...requestIdHeader,
  'Set-Cookie': header('`session=…; Path=/api; HttpOnly; SameSite=Lax; Secure`', true),
};
const invalidLink = error('Invalid or expired link; invalid request.');
const invalidConfirmation = error('Invalid or expired link; This link belongs to a sign-up with a different password; invalid request.');

export const signUpRoute = {
  name: 'AuthSignUp',
  method: 'POST',
  path: '/api/v1/auth/sign-up',
  entry: 'functions/api/auth-sign-up.ts',
  auth: 'none',
  body: signUpBodySchema,
  throttle: AUTH_ROUTE_THROTTLE,
  access: { tables: limits, authMailQueue: true },
  doc: {
    operationId: 'signUp',
    summary: 'Open an account; a confirmation link is e-mailed. The same answer whether or not the address is taken',
    description:
      'Creates the account and its login unconfirmed, and e-mails a single-use confirmation link valid for 24 hours; for an address taken but not yet confirmed, the link confirms the password of this sign-up when opened with that password. An address that is already registered gets the same 202 (and a notice by e-mail instead), so the answer never tells whether an address has an account. The password is stored as a scrypt hash. Limited per source address, per e-mail address and source address together, and per e-mail address and day.',
    tags,
    responses: { 202: ok('Accepted.', acceptedSchema), ...publicFormErrors },
  },
} as const satisfies PublicRoute;

export const confirmRoute = {
  name: 'AuthConfirm',
  method: 'POST',
  path: '/api/v1/auth/confirm',
  entry: 'functions/api/auth-confirm.ts',
  auth: 'none',
  body: confirmBodySchema,
  throttle: AUTH_ROUTE_THROTTLE,
  access: {
    tables: {
      ...limits,
      authTokens: ['GetItem', 'DeleteItem'],
      accounts: ['UpdateItem'],
      logins: ['GetItem', 'UpdateItem'],
    },
  },
  doc: {
    operationId: 'confirmEmail',
    summary: "Confirm the e-mail address with the link's token and the password chosen at sign-up (single use, 24 hours)",
    description:
      "Marks the e-mail address confirmed, with the password chosen in the sign-up that sent this link, which must be given: the link proves the mailbox and the password proves the sign-up, so a link sent by someone else's sign-up with the same address confirms nothing. A different password is 400 `This link belongs to a sign-up with a different password`, changes nothing and leaves the link usable; it counts as a failed sign-in of the address from this source address, within the same limit. With the right password the token is spent: a second use, a token past its 24 hours, or a link of the account made worthless by a later confirmation or password reset, is 400 `Invalid or expired link`. Limited per source address.",
    tags,
    responses: { 200: ok('Confirmed.', okSchema), ...publicFormErrors, 400: invalidConfirmation },
  },
} as const satisfies PublicRoute;

export const signInRoute = {
  name: 'AuthSignIn',
  method: 'POST',
  path: '/api/v1/auth/sign-in',
  entry: 'functions/api/auth-sign-in.ts',
  auth: 'none',
  body: signInBodySchema,
  throttle: AUTH_ROUTE_THROTTLE,
  access: {
    tables: {
      counters: ['GetItem', 'UpdateItem'],
      logins: ['GetItem'],
      accounts: ['GetItem', 'ConditionCheckItem'],
      sessions: ['PutItem'],
    },
  },
  doc: {
    operationId: 'signIn',
    summary: 'Sign in: sets the session cookie and returns its CSRF token',
    description:
      'Checks the password and starts a session: the `session` cookie (HttpOnly, SameSite=Lax, Secure on https) and, in the body, the CSRF token that the page sends as `X-CSRFToken` on POST and DELETE. A wrong password and an unknown address give the same 401, and so does a password changed by a reset while it was being checked. Limited per source address, and failed sign-ins (failed confirmations included) per e-mail address and source address together; a successful sign-in gives its attempt back, and a password reset lifts the limit.',
    tags,
    responses: {
      200: ok('Signed in.', sessionInfoSchema, setCookie),
      ...publicFormErrors,
      401: error('Invalid e-mail or password.'),
      403: error('CSRF validation failed; Account suspended; E-mail address not confirmed (only once the password is proven).'),
    },
  },
} as const satisfies PublicRoute;

export const signOutRoute = {
  name: 'AuthSignOut',
  method: 'POST',
  path: '/api/v1/auth/sign-out',
  entry: 'functions/api/auth-sign-out.ts',
  auth: 'session',
  csrf: true,
  // Ending a session is never refused for its pace: once ended, a second sign-out fails authentication, which the
  // source address's own limit counts.
  rateLimited: false,
  access: { tables: { sessions: ['DeleteItem'] } },
  doc: {
    operationId: 'signOut',
    summary: 'End the session on the server and drop the cookie',
    description:
      'Deletes the session on the server, so the cookie is worthless even if kept, and answers with a cookie that expires at once.',
    tags,
    responses: { 200: ok('Signed out.', okSchema, setCookie), ...signOutErrors },
  },
} as const satisfies SessionRoute;

export const authSessionRoute = {
  name: 'AuthSession',
  method: 'GET',
  path: '/api/v1/auth/session',
  entry: 'functions/api/auth-session.ts',
  auth: 'session',
  csrf: false,
  access: {},
  doc: {
    operationId: 'getSession',
    summary: "The signed-in page's session and its CSRF token",
    description: "The page's way to its CSRF token: a cross-site page cannot read this answer (no CORS), so it cannot forge the header.",
    tags,
    responses: { 200: ok('The session.', sessionInfoSchema), ...sessionErrors },
  },
} as const satisfies SessionRoute;

export const forgotPasswordRoute = {
  name: 'AuthForgotPassword',
  method: 'POST',
  path: '/api/v1/auth/forgot-password',
  entry: 'functions/api/auth-forgot-password.ts',
  auth: 'none',
  body: forgotPasswordBodySchema,
  throttle: AUTH_ROUTE_THROTTLE,
  access: { tables: limits, authMailQueue: true },
  doc: {
    operationId: 'forgotPassword',
    summary: 'E-mail a password reset link (single use, 1 hour). The same answer whether or not the address is registered',
    description:
      'E-mails a single-use link valid for 1 hour to a registered address; an unknown address gets the same 202 and no e-mail. Limited per source address, per e-mail address and source address together, and per e-mail address and day.',
    tags,
    responses: { 202: ok('Accepted.', acceptedSchema), ...publicFormErrors },
  },
} as const satisfies PublicRoute;

export const resetPasswordRoute = {
  name: 'AuthResetPassword',
  method: 'POST',
  path: '/api/v1/auth/reset-password',
  entry: 'functions/api/auth-reset-password.ts',
  auth: 'none',
  body: resetPasswordBodySchema,
  throttle: AUTH_ROUTE_THROTTLE,
  access: {
    tables: {
      ...limits,
      authTokens: ['DeleteItem'],
      logins: ['UpdateItem'],
      sessions: ['Query', 'DeleteItem'],
      accounts: ['UpdateItem'],
    },
  },
  doc: {
    operationId: 'resetPassword',
    summary: "Set a new password with the link's token; every session of the account ends",
    description:
      'Sets the new password and spends the token; every session and every other link of the account stops working, wherever it was, and the address counts as confirmed. A second use, or a token past its hour, is 400 `Invalid or expired link`. Limited per source address.',
    tags,
    responses: { 200: ok('Password changed.', okSchema), ...publicFormErrors, 400: invalidLink },
  },
} as const satisfies PublicRoute;

export const getAccountRoute = {
  name: 'GetAccount',
  method: 'GET',
  path: '/api/v1/account',
  entry: 'functions/api/get-account.ts',
  auth: 'account',
  csrf: false,
  access: {},
  doc: {
    operationId: 'getAccount',
    summary: "The account's identity, standing, balance and deposits",
    description:
      'Whether the e-mail address is confirmed, whether billing is paused, the balance and the total ever deposited. `deposit_required` stays true until $1 has been deposited in total: creating API keys answers 402 until then. Deposits are an operator action. With an API key (as `vps whoami` uses it) or the console session.',
    tags,
    responses: { 200: ok('The account.', accountViewSchema), ...accountErrors([401, 403]) },
  },
} as const satisfies AccountRoute;

export const getAccountActivityRoute = {
  name: 'GetAccountActivity',
  method: 'GET',
  path: `${getAccountRoute.path}/activity`,
  entry: 'functions/api/get-account-activity.ts',
  auth: 'session',
  csrf: false,
  access: { tables: { ledger: ['Query'] } },
  doc: {
    operationId: 'getAccountActivity',
    summary: 'The latest ledger entries and spending per day over the last 30 days',
    description:
      "The account's latest ledger entries (deposits, charges and metered periods) and its spending per UTC day over the last 30 days, for the console's account page.",
    tags,
    responses: { 200: ok('The activity.', accountActivitySchema), ...sessionErrors },
  },
} as const satisfies SessionRoute;

export const consoleRoutes = [
  signUpRoute,
  confirmRoute,
  signInRoute,
  signOutRoute,
  authSessionRoute,
  forgotPasswordRoute,
  resetPasswordRoute,
  getAccountRoute,
  getAccountActivityRoute,
] as const;
