import type { ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
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
} from './auth';

type Headers = NonNullable<Exclude<ResponseConfig['headers'], z.ZodObject>>;

/** What the console's paths take from the main document, so that they share its components. */
export interface DocumentParts {
  readonly sessionCookie: string;
  /** The security scheme of the X-CSRFToken header. */
  readonly csrfToken: string;
  readonly requestIdHeader: Headers;
  readonly error: (description: string) => ResponseConfig;
  readonly rateLimitError: z.ZodType;
  /** 429 for a source address over its failed authentications, as every cookie or key route may answer. */
  readonly failedAuthenticationLimited: ResponseConfig;
}

/** The console's paths: sign-up, confirmation, sign-in and out, password reset, and the account's figures. */
export function consolePaths(parts: DocumentParts): RouteConfig[] {
  const { sessionCookie, csrfToken, requestIdHeader, error, rateLimitError, failedAuthenticationLimited } = parts;
  const json = (schema: z.ZodType) => ({ 'application/json': { schema } });
  const ok = (description: string, schema: z.ZodType, headers: Headers = requestIdHeader): ResponseConfig => ({
    description,
    headers,
    content: json(schema),
  });
  const body = (schema: z.ZodType) => ({ body: { required: true, content: json(schema) } });
  const limited = {
    429: <ResponseConfig>{
      description: 'Too many attempts from this address or for this e-mail address (sliding 15-minute windows).',
      headers: {
        ...requestIdHeader,
        'Retry-After': { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'integer', minimum: 1 } },
      },
      content: json(rateLimitError),
    },
  };
  const common = {
    400: error('Invalid request (the text says which field and why).'),
    403: error('CSRF validation failed (a cross-site page).'),
    413: error('Request body too large (limit 16 KiB).'),
    500: error('Internal server error (no details).'),
  };
  const sessionErrors = {
    401: error('No valid session.'),
    403: error('CSRF validation failed; Account suspended; Account not confirmed.'),
    429: failedAuthenticationLimited,
    500: common[500],
  };
  const setCookie: Headers = {
    ...requestIdHeader,
    'Set-Cookie': { description: '`session=…; Path=/api; HttpOnly; SameSite=Lax; Secure`', required: true, schema: { type: 'string' } },
  };
  const tags = ['console'];
  return [
    {
      method: 'post',
      path: '/api/v1/auth/sign-up',
      operationId: 'signUp',
      description:
        'Creates the account and its login unconfirmed, and e-mails a single-use confirmation link valid for 24 hours. An address that is already registered gets the same 202 (and a notice by e-mail instead), so the answer never tells whether an address has an account. The password is stored as a scrypt hash. Limited per source address and per e-mail address.',
      tags,
      summary: 'Open an account; a confirmation link is e-mailed. The same answer whether or not the address is taken',
      request: body(signUpBodySchema),
      responses: { 202: ok('Accepted.', acceptedSchema), ...common, ...limited },
    },
    {
      method: 'post',
      path: '/api/v1/auth/confirm',
      operationId: 'confirmEmail',
      description:
        'Marks the e-mail address confirmed and spends the token: a second use, or a token past its 24 hours, is 400 `Invalid or expired link`. Limited per source address.',
      tags,
      summary: "Confirm the e-mail address with the link's token (single use, 24 hours)",
      request: body(confirmBodySchema),
      responses: { 200: ok('Confirmed.', okSchema), ...common, 400: error('Invalid or expired link; invalid request.'), ...limited },
    },
    {
      method: 'post',
      path: '/api/v1/auth/sign-in',
      operationId: 'signIn',
      description:
        'Checks the password and starts a session: the `session` cookie (HttpOnly, SameSite=Lax, Secure on https) and, in the body, the CSRF token that the page sends as `X-CSRFToken` on POST and DELETE. A wrong password and an unknown address give the same 401. Limited per source address and per e-mail address; a successful sign-in gives its attempt back.',
      tags,
      summary: 'Sign in: sets the session cookie and returns its CSRF token',
      request: body(signInBodySchema),
      responses: {
        200: ok('Signed in.', sessionInfoSchema, setCookie),
        ...common,
        401: error('Invalid e-mail or password.'),
        403: error('CSRF validation failed; Account suspended; E-mail address not confirmed (only once the password is proven).'),
        ...limited,
      },
    },
    {
      method: 'post',
      path: '/api/v1/auth/sign-out',
      operationId: 'signOut',
      description:
        'Deletes the session on the server, so the cookie is worthless even if kept, and answers with a cookie that expires at once.',
      tags,
      summary: 'End the session on the server and drop the cookie',
      security: [{ [sessionCookie]: [], [csrfToken]: [] }],
      responses: { 200: ok('Signed out.', okSchema, setCookie), ...sessionErrors },
    },
    {
      method: 'get',
      path: '/api/v1/auth/session',
      operationId: 'getSession',
      description: "The page's way to its CSRF token: a cross-site page cannot read this answer (no CORS), so it cannot forge the header.",
      tags,
      summary: "The signed-in page's session and its CSRF token",
      security: [{ [sessionCookie]: [] }],
      responses: { 200: ok('The session.', sessionInfoSchema), ...sessionErrors },
    },
    {
      method: 'post',
      path: '/api/v1/auth/forgot-password',
      operationId: 'forgotPassword',
      description:
        'E-mails a single-use link valid for 1 hour to a registered address; an unknown address gets the same 202 and no e-mail. Limited per source address and per e-mail address.',
      tags,
      summary: 'E-mail a password reset link (single use, 1 hour). The same answer whether or not the address is registered',
      request: body(forgotPasswordBodySchema),
      responses: { 202: ok('Accepted.', acceptedSchema), ...common, ...limited },
    },
    {
      method: 'post',
      path: '/api/v1/auth/reset-password',
      operationId: 'resetPassword',
      description:
        'Sets the new password and spends the token; every session of the account ends, wherever it was signed in, and the address counts as confirmed. A second use, or a token past its hour, is 400 `Invalid or expired link`. Limited per source address.',
      tags,
      summary: "Set a new password with the link's token; every session of the account ends",
      request: body(resetPasswordBodySchema),
      responses: { 200: ok('Password changed.', okSchema), ...common, 400: error('Invalid or expired link; invalid request.'), ...limited },
    },
    {
      method: 'get',
      path: '/api/v1/account',
      operationId: 'getAccount',
      description:
        'Whether the e-mail address is confirmed, whether billing is paused, the balance and the total ever deposited. `deposit_required` stays true until $1 has been deposited in total: creating API keys answers 402 until then. Deposits are an operator action.',
      tags,
      summary: "The signed-in account's standing, balance and deposits",
      security: [{ [sessionCookie]: [] }],
      responses: { 200: ok('The account.', accountViewSchema), ...sessionErrors },
    },
    {
      method: 'get',
      path: '/api/v1/account/activity',
      operationId: 'getAccountActivity',
      description:
        "The account's latest ledger entries (deposits, charges and metered periods) and its spending per UTC day over the last 30 days, for the console's account page.",
      tags,
      summary: 'The latest ledger entries and spending per day over the last 30 days',
      security: [{ [sessionCookie]: [] }],
      responses: { 200: ok('The activity.', accountActivitySchema), ...sessionErrors },
    },
  ];
}
