import type { FunctionAccess } from './access';
import type { RouteDefinition } from './routes';

/**
 * The console's routes: self-service sign-up and sign-in under /api/v1/auth, and the account's own figures for
 * its pages. Same pipeline as every other route; the public ones carry their own brute-force limits.
 */
/** The brute-force windows; sign-in also reads one to give a correct password's attempt back. */
const limits = { counters: ['UpdateItem'] } as const satisfies FunctionAccess['tables'];

/** The gateway's own ceiling on each public sign-in route, below the stage default: guessing stays slow for everyone. */
export const AUTH_ROUTE_THROTTLE = { rateLimit: 10, burstLimit: 20 } as const;

export const consoleRoutes: readonly RouteDefinition[] = [
  {
    name: 'AuthSignUp',
    method: 'POST',
    path: '/api/v1/auth/sign-up',
    entry: 'functions/api/auth-sign-up.ts',
    auth: 'none',
    throttle: AUTH_ROUTE_THROTTLE,
    access: {
      tables: { ...limits, logins: ['GetItem', 'PutItem'], accounts: ['GetItem', 'PutItem'], authTokens: ['PutItem'] },
      sendsMail: true,
    },
  },
  {
    name: 'AuthConfirm',
    method: 'POST',
    path: '/api/v1/auth/confirm',
    entry: 'functions/api/auth-confirm.ts',
    auth: 'none',
    throttle: AUTH_ROUTE_THROTTLE,
    access: { tables: { ...limits, authTokens: ['DeleteItem'], accounts: ['UpdateItem'] } },
  },
  {
    name: 'AuthSignIn',
    method: 'POST',
    path: '/api/v1/auth/sign-in',
    entry: 'functions/api/auth-sign-in.ts',
    auth: 'none',
    throttle: AUTH_ROUTE_THROTTLE,
    access: { tables: { counters: ['GetItem', 'UpdateItem'], logins: ['GetItem'], accounts: ['GetItem'], sessions: ['PutItem'] } },
  },
  {
    name: 'AuthSignOut',
    method: 'POST',
    path: '/api/v1/auth/sign-out',
    entry: 'functions/api/auth-sign-out.ts',
    auth: 'session',
    access: { tables: { sessions: ['DeleteItem'] } },
  },
  {
    name: 'AuthSession',
    method: 'GET',
    path: '/api/v1/auth/session',
    entry: 'functions/api/auth-session.ts',
    auth: 'session',
    access: {},
  },
  {
    name: 'AuthForgotPassword',
    method: 'POST',
    path: '/api/v1/auth/forgot-password',
    entry: 'functions/api/auth-forgot-password.ts',
    auth: 'none',
    throttle: AUTH_ROUTE_THROTTLE,
    access: { tables: { ...limits, logins: ['GetItem'], accounts: ['GetItem'], authTokens: ['PutItem'] }, sendsMail: true },
  },
  {
    name: 'AuthResetPassword',
    method: 'POST',
    path: '/api/v1/auth/reset-password',
    entry: 'functions/api/auth-reset-password.ts',
    auth: 'none',
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
  },
  {
    name: 'GetAccount',
    method: 'GET',
    path: '/api/v1/account',
    entry: 'functions/api/get-account.ts',
    auth: 'session',
    access: {},
  },
  {
    name: 'GetAccountActivity',
    method: 'GET',
    path: '/api/v1/account/activity',
    entry: 'functions/api/get-account-activity.ts',
    auth: 'session',
    access: { tables: { ledger: ['Query'] } },
  },
];
