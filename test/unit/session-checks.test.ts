import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { openAccount, openSession } from '../../shared/domain/accounts';
import type { Deps } from '../../shared/domain/deps';
import { statusOf } from '../../shared/http/failure-status';
import { authenticateSession } from '../../shared/http/session-auth';
import { updateAccountFlags } from '../../shared/store/accounts';
import { memoryDeps } from '../support/unit-deps';

const HOST = 'api.example.com';

function request(headers: Record<string, string>, cookies: string[] = []): APIGatewayProxyEventV2 {
  return { headers: { host: HOST, ...headers }, cookies } as unknown as APIGatewayProxyEventV2;
}

/** The status and text a session's authentication refused with, or 'accepted'. */
async function verdict(deps: Deps, event: APIGatewayProxyEventV2, requireCsrf: boolean): Promise<[number, string] | 'accepted'> {
  try {
    await authenticateSession(deps, event, requireCsrf, async () => undefined);
    return 'accepted';
  } catch (error) {
    return [statusOf(error), (error as Error).message];
  }
}

/** A signed-in browser of a fresh account; `flags` change the account after sign-in. */
async function signedIn(flags: Parameters<typeof updateAccountFlags>[2] = {}, ttlSeconds?: number) {
  const { deps } = memoryDeps();
  const account = await openAccount(deps, { email: 'ann@example.com', confirmed: true, suspended: false });
  const { session, csrfToken } = await openSession(deps, account.account_id, ttlSeconds);
  if (Object.keys(flags).length > 0) await updateAccountFlags(deps, account.account_id, flags);
  return { deps, cookie: `session=${session}`, csrfToken };
}

describe('the checks of a session, in order', () => {
  it.each([
    { why: 'there is no cookie', headers: {} as Record<string, string>, text: 'Missing session cookie' },
    {
      why: 'a Bearer key comes instead',
      headers: { authorization: 'Bearer svcmcp_x' },
      text: 'API keys are not accepted here: key management needs a session cookie',
    },
  ])('answers 401 when $why', async ({ headers, text }) => {
    const { deps } = memoryDeps();

    expect(await verdict(deps, request(headers), false)).toEqual([401, text]);
  });

  it.each([
    { why: 'the session is unknown', session: () => signedIn().then((b) => ({ ...b, cookie: 'session=nope' })) },
    { why: 'the session has expired', session: () => signedIn({}, -1) },
  ])('answers 401 "Invalid or expired session" when $why, before the CSRF token is looked at', async ({ session }) => {
    const { deps, cookie } = await session();

    expect(await verdict(deps, request({ 'sec-fetch-site': 'cross-site' }, [cookie]), true)).toEqual([401, 'Invalid or expired session']);
  });

  it.each([
    { why: 'no X-CSRFToken', headers: (_token: string) => ({}) },
    { why: 'another X-CSRFToken', headers: (_token: string) => ({ 'x-csrftoken': 'not-the-token' }) },
    { why: 'the right token from another site', headers: (token: string) => ({ 'x-csrftoken': token, origin: 'https://evil.example' }) },
  ])('answers 403 "CSRF validation failed" for a change with $why, before the account is looked at', async ({ headers }) => {
    const { deps, cookie, csrfToken } = await signedIn({ suspended: true });

    expect(await verdict(deps, request(headers(csrfToken), [cookie]), true)).toEqual([403, 'CSRF validation failed']);
  });

  it.each([
    { standing: 'suspended', flags: { suspended: true }, refusal: [403, 'Account suspended'] },
    { standing: 'unconfirmed', flags: { confirmed: false }, refusal: [403, 'Account not confirmed'] },
    { standing: 'deleted', flags: { deleted_at: '2026-01-01T00:00:00.000Z' }, refusal: [401, 'Account not found'] },
    { standing: 'in standing', flags: {}, refusal: 'accepted' },
  ])('answers $refusal for a $standing account once the session and its token hold', async ({ flags, refusal }) => {
    const { deps, cookie, csrfToken } = await signedIn(flags);

    expect(await verdict(deps, request({ 'x-csrftoken': csrfToken, origin: `https://${HOST}` }, [cookie]), true)).toEqual(refusal);
  });
});
