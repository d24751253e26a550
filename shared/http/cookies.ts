import type { Platform } from '../platform';

/**
 * The console's session cookie: HttpOnly (no script reads it), SameSite=Lax (no cross-site POST carries it),
 * Secure except on the local http runtime, and scoped to the API's paths.
 */
export const SESSION_COOKIE = 'session';

function attributes(deps: Platform, expires: Date): string {
  return `Path=/api; Expires=${expires.toUTCString()}; HttpOnly; SameSite=Lax${deps.config.console.secureCookies ? '; Secure' : ''}`;
}

export function sessionCookie(deps: Platform, token: string, expiresAt: Date): string {
  return `${SESSION_COOKIE}=${token}; ${attributes(deps, expiresAt)}`;
}

/** Tells the browser to drop its session cookie. */
export function clearedSessionCookie(deps: Platform): string {
  return `${SESSION_COOKIE}=; ${attributes(deps, new Date(0))}`;
}
