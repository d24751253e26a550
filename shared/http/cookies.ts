import { config } from '../config';

/**
 * The console's session cookie: HttpOnly (no script reads it), SameSite=Lax (no cross-site POST carries it),
 * Secure except on the local http runtime, and scoped to the API's paths.
 */
export const SESSION_COOKIE = 'session';

function attributes(expires: Date): string {
  return `Path=/api; Expires=${expires.toUTCString()}; HttpOnly; SameSite=Lax${config().console.secureCookies ? '; Secure' : ''}`;
}

export function sessionCookie(token: string, expiresAt: Date): string {
  return `${SESSION_COOKIE}=${token}; ${attributes(expiresAt)}`;
}

/** Tells the browser to drop its session cookie. */
export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; ${attributes(new Date(0))}`;
}
