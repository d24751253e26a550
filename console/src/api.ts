/**
 * Calls to the service's own API on this origin. The session cookie is HttpOnly and travels by itself; the CSRF
 * token lives only in this module's memory and is fetched again from the API after a reload.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: Record<string, unknown>,
  ) {
    super(message);
  }
}

let csrfToken: string | undefined;

export interface Session {
  readonly account_id: string;
  readonly email: string;
  readonly csrf_token: string;
  readonly expires_at: string;
}

export async function call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrftoken'] = csrfToken;
  const response = await fetch(`/api/v1/${path}`, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok)
    throw new ApiError(response.status, typeof parsed.error === 'string' ? parsed.error : `Request failed (${response.status})`, parsed);
  return parsed as T;
}

/** The current session, or undefined when signed out. */
export async function currentSession(): Promise<Session | undefined> {
  try {
    const session = await call<Session>('GET', 'auth/session');
    csrfToken = session.csrf_token;
    return session;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
      csrfToken = undefined;
      return undefined;
    }
    throw error;
  }
}

export async function signIn(email: string, password: string): Promise<Session> {
  const session = await call<Session>('POST', 'auth/sign-in', { email, password });
  csrfToken = session.csrf_token;
  return session;
}

export async function signOut(): Promise<void> {
  try {
    await call('POST', 'auth/sign-out');
  } finally {
    csrfToken = undefined;
  }
}
