import type { RouteDefinition } from './routes';

/**
 * The console's routes: self-service sign-up and sign-in under /api/v1/auth, and the account's own figures for
 * its pages. Same pipeline as every other route; the public ones carry their own brute-force limits.
 */
const limits = { counters: 'readwrite' } as const;

export const consoleRoutes: readonly RouteDefinition[] = [
  {
    name: 'AuthSignUp',
    method: 'POST',
    path: '/api/v1/auth/sign-up',
    entry: 'functions/api/auth-sign-up.ts',
    auth: 'none',
    access: { tables: { ...limits, logins: 'readwrite', accounts: 'readwrite', authTokens: 'write' }, sendsMail: true },
  },
  {
    name: 'AuthConfirm',
    method: 'POST',
    path: '/api/v1/auth/confirm',
    entry: 'functions/api/auth-confirm.ts',
    auth: 'none',
    access: { tables: { ...limits, authTokens: 'readwrite', accounts: 'readwrite' } },
  },
  {
    name: 'AuthSignIn',
    method: 'POST',
    path: '/api/v1/auth/sign-in',
    entry: 'functions/api/auth-sign-in.ts',
    auth: 'none',
    access: { tables: { ...limits, logins: 'read', accounts: 'read', sessions: 'write' } },
  },
  {
    name: 'AuthSignOut',
    method: 'POST',
    path: '/api/v1/auth/sign-out',
    entry: 'functions/api/auth-sign-out.ts',
    auth: 'session',
    access: { tables: { sessions: 'readwrite' } },
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
    access: { tables: { ...limits, logins: 'read', accounts: 'read', authTokens: 'write' }, sendsMail: true },
  },
  {
    name: 'AuthResetPassword',
    method: 'POST',
    path: '/api/v1/auth/reset-password',
    entry: 'functions/api/auth-reset-password.ts',
    auth: 'none',
    access: { tables: { ...limits, authTokens: 'readwrite', logins: 'readwrite', sessions: 'readwrite', accounts: 'readwrite' } },
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
    access: { tables: { ledger: 'read' } },
  },
];
