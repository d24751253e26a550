import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { deposit, charge } from '../../shared/domain/billing';
import { contractViolations } from '../support/contract';
import { latestLink, mailsTo, tokenOf } from '../support/mailbox';
import { useTestRuntime } from '../support/runtime';

const mailDir = mkdtempSync(join(tmpdir(), 'console-mail-'));
const runtime = useTestRuntime({ mailDir });
afterAll(() => rmSync(mailDir, { recursive: true, force: true }));

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly cookies: string[];
  // Tests read arbitrary fields of JSON bodies.
  readonly body: any;
  /** From sending the request to the end of the answer. */
  readonly elapsedMs: number;
}

interface SendOptions {
  /** The loopback address the request comes from: each test has its own, so per-address limits stay apart. */
  readonly from: string;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

/**
 * One request from a chosen local source address, checked against the OpenAPI document. It returns once the e-mail
 * the request may have asked for has been written, as a person would read it only after the answer.
 */
async function send(method: string, path: string, options: SendOptions): Promise<Answer> {
  const answer = await answerTo(method, path, options);
  await runtime.mailSettled();
  return answer;
}

function answerTo(method: string, path: string, { from, body, headers = {} }: SendOptions): Promise<Answer> {
  const url = new URL(path, runtime.baseUrl);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      { method, localAddress: from, headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...headers } },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () => {
          const elapsedMs = performance.now() - started;
          const text = Buffer.concat(chunks).toString();
          const parsed = text ? JSON.parse(text) : undefined;
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
          const cookies = incoming.headers['set-cookie'] ?? [];
          for (const cookie of cookies) responseHeaders.append('set-cookie', cookie);
          const violations = contractViolations(method, path, incoming.statusCode ?? 0, responseHeaders, parsed);
          if (violations.length > 0) reject(new Error(`response breaks the OpenAPI document:\n${violations.join('\n')}`));
          else resolve({ status: incoming.statusCode ?? 0, headers: responseHeaders, cookies, body: parsed, elapsedMs });
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

let addressCounter = 10;
/** A fresh loopback source address for one test. */
const newAddress = () => `127.0.${Math.floor(addressCounter / 250)}.${(addressCounter++ % 250) + 2}`;
let emailCounter = 0;
const newEmail = () => `person${++emailCounter}.${Date.now()}@example.com`;

const PASSWORD = 'correct horse battery';
const sansRequestId = ({ request_id: _id, ...rest }: Record<string, unknown>) => rest;

/** Signs up, confirms through the mailed link and signs in; returns the browser's cookie and CSRF token. */
async function confirmedAccount(from: string, email = newEmail(), password = PASSWORD) {
  await send('POST', '/api/v1/auth/sign-up', { from, body: { email, password } });
  const token = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));
  await send('POST', '/api/v1/auth/confirm', { from, body: { token, password } });
  const signedIn = await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password } });
  const cookie = signedIn.cookies[0]?.split(';')[0] ?? '';
  return { email, password, cookie, csrf: signedIn.body.csrf_token as string, accountId: signedIn.body.account_id as string };
}

async function tableItems(table: 'authTokens' | 'sessions', accountId: string) {
  const { Items = [] } = await runtime.deps.dynamo.send(
    new ScanCommand({
      TableName: runtime.tableNames[table],
      FilterExpression: 'account_id = :id',
      ExpressionAttributeValues: { ':id': accountId },
    }),
  );
  return Items;
}

async function expireAll(table: 'authTokens' | 'sessions', accountId: string) {
  const key = table === 'authTokens' ? 'token_hash' : 'session_hash';
  for (const item of await tableItems(table, accountId)) {
    await runtime.deps.dynamo.send(
      new UpdateCommand({
        TableName: runtime.tableNames[table],
        Key: { [key]: item[key] },
        UpdateExpression: 'SET expires_at = :past',
        ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 1 },
      }),
    );
  }
}

describe('POST /api/v1/auth/sign-up', () => {
  it('answers 202 and mails a single-use confirmation link into the console', async () => {
    const from = newAddress();
    const email = newEmail();

    const answer = await send('POST', '/api/v1/auth/sign-up', { from, body: { email: email.toUpperCase(), password: PASSWORD } });

    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ ok: true, message: 'If the address can be used, a confirmation link is on its way to it.' });
    const link = await latestLink(mailDir, email, 'Confirm your e-mail address');
    expect(link.href.startsWith(`${runtime.baseUrl}/console/#/confirm?token=`)).toBe(true);
    expect(tokenOf(link)).toMatch(/^[0-9A-Za-z]{43}$/);
  });

  it('gives the same answer for an address that is already registered, and mails its owner instead', async () => {
    const from = newAddress();
    const { email } = await confirmedAccount(from);
    const fresh = await send('POST', '/api/v1/auth/sign-up', { from, body: { email: newEmail(), password: PASSWORD } });

    const taken = await send('POST', '/api/v1/auth/sign-up', { from, body: { email, password: 'another password entirely' } });

    expect(taken.status).toBe(fresh.status);
    expect(sansRequestId(taken.body)).toEqual(sansRequestId(fresh.body));
    expect((await mailsTo(mailDir, email)).map((mail) => mail.subject)).toEqual([
      'Confirm your e-mail address',
      'You already have an account',
    ]);
  });

  // The whole table of the sign-up's checks is the unit tier's (test/unit/sign-up-checks.test.ts).
  it.each([
    [{ email: 'not-an-address', password: PASSWORD }, 'email must be an e-mail address'],
    [{ email: 'a@example.com', password: 'short' }, 'password must be at least 10 characters'],
  ])('refuses %j with 400 "%s"', async (body, error) => {
    const answer = await send('POST', '/api/v1/auth/sign-up', { from: newAddress(), body });

    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe(error);
  });

  it("confirms only with the password of the sign-up that sent the link: the owner cannot confirm a stranger's sign-up", async () => {
    const email = newEmail();
    const stranger = newAddress();
    const owner = newAddress();
    await send('POST', '/api/v1/auth/sign-up', { from: stranger, body: { email, password: 'attackerpw1' } });
    const strangersLink = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));
    await send('POST', '/api/v1/auth/sign-up', { from: owner, body: { email, password: 'ownerpass12' } });
    const ownersLink = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));
    const signIn = (password: string) => send('POST', '/api/v1/auth/sign-in', { from: newAddress(), body: { email, password } });

    const strangersLinkWithOwnersPassword = await send('POST', '/api/v1/auth/confirm', {
      from: owner,
      body: { token: strangersLink, password: 'ownerpass12' },
    });

    expect([strangersLinkWithOwnersPassword.status, strangersLinkWithOwnersPassword.body.error]).toEqual([
      400,
      'This link belongs to a sign-up with a different password',
    ]);
    expect((await signIn('attackerpw1')).status).toBe(403);
    expect((await signIn('ownerpass12')).status).toBe(401);

    const ownersLinkWithOwnersPassword = await send('POST', '/api/v1/auth/confirm', {
      from: owner,
      body: { token: ownersLink, password: 'ownerpass12' },
    });

    expect(ownersLinkWithOwnersPassword.status).toBe(200);
    expect((await signIn('ownerpass12')).status).toBe(200);
    expect((await signIn('attackerpw1')).status).toBe(401);
    const strangersLinkAfterwards = await send('POST', '/api/v1/auth/confirm', {
      from: stranger,
      body: { token: strangersLink, password: 'attackerpw1' },
    });
    expect([strangersLinkAfterwards.status, strangersLinkAfterwards.body.error]).toEqual([400, 'Invalid or expired link']);
  });

  it('lets exactly one of two racing sign-ups with one address open an account', async () => {
    const from = newAddress();
    const email = newEmail();

    await Promise.all([
      send('POST', '/api/v1/auth/sign-up', { from, body: { email, password: PASSWORD } }),
      send('POST', '/api/v1/auth/sign-up', { from, body: { email, password: 'the other password' } }),
    ]);

    // Whichever sign-up the latest link belongs to, it confirms with that sign-up's password only.
    const token = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));
    const confirms: number[] = [];
    for (const password of [PASSWORD, 'the other password']) {
      confirms.push((await send('POST', '/api/v1/auth/confirm', { from, body: { token, password } })).status);
    }
    expect(confirms.sort()).toEqual([200, 400]);
    const signIns = await Promise.all(
      [PASSWORD, 'the other password'].map((password) => send('POST', '/api/v1/auth/sign-in', { from, body: { email, password } })),
    );
    expect(signIns.map((answer) => answer.status).sort()).toEqual([200, 401]);
  });
});

describe('POST /api/v1/auth/confirm', () => {
  it('confirms once; the same link a second time is 400 "Invalid or expired link"', async () => {
    const from = newAddress();
    const email = newEmail();
    await send('POST', '/api/v1/auth/sign-up', { from, body: { email, password: PASSWORD } });
    const token = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));

    const first = await send('POST', '/api/v1/auth/confirm', { from, body: { token, password: PASSWORD } });
    const second = await send('POST', '/api/v1/auth/confirm', { from, body: { token, password: PASSWORD } });

    expect(first.status).toBe(200);
    expect(first.body).toEqual({ ok: true });
    expect(second.status).toBe(400);
    expect(second.body.error).toBe('Invalid or expired link');
  });

  it('lets exactly one of two racing uses of one link through', async () => {
    const from = newAddress();
    const email = newEmail();
    await send('POST', '/api/v1/auth/sign-up', { from, body: { email, password: PASSWORD } });
    const token = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));

    const answers = await Promise.all(
      [1, 2, 3].map(() => send('POST', '/api/v1/auth/confirm', { from, body: { token, password: PASSWORD } })),
    );

    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400, 400]);
  });

  it('refuses an expired link', async () => {
    const from = newAddress();
    const email = newEmail();
    await send('POST', '/api/v1/auth/sign-up', { from, body: { email, password: PASSWORD } });
    const token = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));
    const login = await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: PASSWORD } });
    expect(login.status).toBe(403);
    const [item] = await runtime.deps.dynamo
      .send(
        new ScanCommand({
          TableName: runtime.tableNames.authTokens,
          FilterExpression: 'email = :e',
          ExpressionAttributeValues: { ':e': email },
        }),
      )
      .then((r) => r.Items ?? []);
    await expireAll('authTokens', String(item?.account_id));

    const answer = await send('POST', '/api/v1/auth/confirm', { from, body: { token, password: PASSWORD } });

    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('Invalid or expired link');
  });

  it('does not accept a password-reset token as a confirmation', async () => {
    const from = newAddress();
    const { email } = await confirmedAccount(from);
    await send('POST', '/api/v1/auth/forgot-password', { from, body: { email } });
    const resetToken = tokenOf(await latestLink(mailDir, email, 'Reset your password'));

    const answer = await send('POST', '/api/v1/auth/confirm', { from, body: { token: resetToken, password: PASSWORD } });

    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('Invalid or expired link');
  });

  it('needs the password chosen at sign-up', async () => {
    const from = newAddress();
    const email = newEmail();
    await send('POST', '/api/v1/auth/sign-up', { from, body: { email, password: PASSWORD } });
    const token = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));

    const answer = await send('POST', '/api/v1/auth/confirm', { from, body: { token } });

    expect([answer.status, answer.body.error]).toEqual([400, 'password is required']);
  });

  it('counts a wrong password on a link as a failed sign-in: the sixth attempt from that source is 429, and the link still works', async () => {
    const guesser = newAddress();
    const email = newEmail();
    await send('POST', '/api/v1/auth/sign-up', { from: guesser, body: { email, password: PASSWORD } });
    const token = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));

    const guesses = [];
    for (let guess = 1; guess <= 5; guess++) {
      guesses.push(await send('POST', '/api/v1/auth/confirm', { from: guesser, body: { token, password: `wrong guess ${guess}` } }));
    }
    const rightFromGuesser = await send('POST', '/api/v1/auth/confirm', { from: guesser, body: { token, password: PASSWORD } });
    const signInFromGuesser = await send('POST', '/api/v1/auth/sign-in', { from: guesser, body: { email, password: PASSWORD } });
    const rightFromOwner = await send('POST', '/api/v1/auth/confirm', { from: newAddress(), body: { token, password: PASSWORD } });

    expect(guesses.map((answer) => [answer.status, answer.body.error])).toEqual(
      Array(5).fill([400, 'This link belongs to a sign-up with a different password']),
    );
    expect([rightFromGuesser.status, rightFromGuesser.body.error]).toEqual([429, 'Rate limit exceeded']);
    expect(signInFromGuesser.status).toBe(429);
    expect(rightFromOwner.status).toBe(200);
    expect((await send('POST', '/api/v1/auth/sign-in', { from: newAddress(), body: { email, password: PASSWORD } })).status).toBe(200);
  });
});

describe('POST /api/v1/auth/sign-in', () => {
  it('sets an HttpOnly, SameSite=Lax session cookie and returns the CSRF token the key routes accept', async () => {
    const from = newAddress();
    const email = newEmail();
    await send('POST', '/api/v1/auth/sign-up', { from, body: { email, password: PASSWORD } });
    await send('POST', '/api/v1/auth/confirm', {
      from,
      body: { token: tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address')), password: PASSWORD },
    });

    const answer = await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: PASSWORD } });

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      account_id: expect.stringMatching(/^acct_/),
      email,
      csrf_token: expect.stringMatching(/^[0-9A-Za-z]{43}$/),
      expires_at: expect.any(String),
    });
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const [cookie = ''] = answer.cookies;
    expect(cookie).toMatch(/^session=[0-9A-Za-z]{43}; Path=\/api; Expires=[^;]+ GMT; HttpOnly; SameSite=Lax$/);
    const cookieValue = cookie.split(';')[0] ?? '';
    const keys = await send('POST', '/api/v1/keys', {
      from,
      body: { name: 'ci' },
      headers: { cookie: cookieValue, 'x-csrftoken': answer.body.csrf_token },
    });
    expect(keys.status).toBe(402);
    expect(keys.body.error).toBe('Deposit required');
    const session = await send('GET', '/api/v1/auth/session', { from, headers: { cookie: cookieValue } });
    expect(session.body).toEqual({
      account_id: answer.body.account_id,
      email,
      csrf_token: answer.body.csrf_token,
      expires_at: answer.body.expires_at,
    });
  });

  it('answers a wrong password and an unknown address alike', async () => {
    const from = newAddress();
    const { email } = await confirmedAccount(from);

    const wrongPassword = await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: 'not the password' } });
    const unknown = await send('POST', '/api/v1/auth/sign-in', { from, body: { email: newEmail(), password: 'not the password' } });

    expect(wrongPassword.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrongPassword.body.error).toBe('Invalid e-mail or password');
    expect(sansRequestId(unknown.body)).toEqual(sansRequestId(wrongPassword.body));
    expect(wrongPassword.cookies).toEqual([]);
  });

  it('refuses the sixth attempt from one source within 15 minutes after five failures there, even with the right password', async () => {
    const { email } = await confirmedAccount(newAddress());
    const guesser = newAddress();
    const failures = [];
    for (let attempt = 0; attempt < 5; attempt++)
      failures.push(await send('POST', '/api/v1/auth/sign-in', { from: guesser, body: { email, password: `guess ${attempt}` } }));

    const right = await send('POST', '/api/v1/auth/sign-in', { from: guesser, body: { email, password: PASSWORD } });
    const otherAccount = await confirmedAccount(guesser);

    expect(failures.map((answer) => answer.status)).toEqual([401, 401, 401, 401, 401]);
    expect(right.status).toBe(429);
    expect(right.body).toEqual({ error: 'Rate limit exceeded', retry_after: expect.any(Number), request_id: expect.any(String) });
    expect(Number(right.headers.get('retry-after'))).toBe(right.body.retry_after);
    expect(right.body.retry_after).toBeGreaterThan(0);
    expect(right.body.retry_after).toBeLessThanOrEqual(900);
    expect(otherAccount.csrf).toMatch(/^[0-9A-Za-z]{43}$/);
  });

  it("does not lock the owner out with someone else's failures", async () => {
    const owner = newAddress();
    const { email } = await confirmedAccount(owner);
    for (let attempt = 0; attempt < 5; attempt++)
      await send('POST', '/api/v1/auth/sign-in', { from: newAddress(), body: { email, password: `guess ${attempt}` } });
    const guesser = newAddress();
    for (let attempt = 0; attempt < 6; attempt++)
      await send('POST', '/api/v1/auth/sign-in', { from: guesser, body: { email, password: `guess ${attempt}` } });

    const lockedGuesser = await send('POST', '/api/v1/auth/sign-in', { from: guesser, body: { email, password: PASSWORD } });
    const theOwner = await send('POST', '/api/v1/auth/sign-in', { from: owner, body: { email, password: PASSWORD } });

    expect(lockedGuesser.status).toBe(429);
    expect(theOwner.status).toBe(200);
  });

  it('lifts the lock with a password reset', async () => {
    const from = newAddress();
    const { email } = await confirmedAccount(from);
    for (let attempt = 0; attempt < 5; attempt++)
      await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: `guess ${attempt}` } });
    const locked = await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: PASSWORD } });
    await send('POST', '/api/v1/auth/forgot-password', { from, body: { email } });
    const token = tokenOf(await latestLink(mailDir, email, 'Reset your password'));
    await send('POST', '/api/v1/auth/reset-password', { from, body: { token, password: 'a brand new password' } });

    const after = await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: 'a brand new password' } });

    expect(locked.status).toBe(429);
    expect(after.status).toBe(200);
  });

  it('counts only failures: a correct password gives its attempt back', async () => {
    const from = newAddress();
    const { email } = await confirmedAccount(from);

    const answers = [];
    for (let attempt = 0; attempt < 7; attempt++)
      answers.push(await send('POST', '/api/v1/auth/sign-in', { from: newAddress(), body: { email, password: PASSWORD } }));

    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
  });

  it('checks at most ten of forty guesses from eight sources, and still lets the owner in from a known source', async () => {
    const owner = newAddress();
    const { email } = await confirmedAccount(owner);
    const guesses = [];
    for (let source = 0; source < 8; source++) {
      const from = newAddress();
      for (let attempt = 0; attempt < 5; attempt++)
        guesses.push(await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: `guess ${source}.${attempt}` } }));
    }

    const rightFromElsewhere = await send('POST', '/api/v1/auth/sign-in', { from: newAddress(), body: { email, password: PASSWORD } });
    const theOwner = await send('POST', '/api/v1/auth/sign-in', { from: owner, body: { email, password: PASSWORD } });

    // A 401 is a password checked and found wrong; a 429 was refused before the check.
    expect(guesses.filter((answer) => answer.status === 401)).toHaveLength(10);
    expect(guesses.slice(10).map((answer) => answer.status)).toEqual(Array.from({ length: 30 }, () => 429));
    expect(guesses[10]?.body).toEqual({ error: 'Rate limit exceeded', retry_after: expect.any(Number), request_id: expect.any(String) });
    expect(Number(guesses[10]?.headers.get('retry-after'))).toBe(guesses[10]?.body.retry_after);
    expect(rightFromElsewhere.status).toBe(429);
    expect(theOwner.status).toBe(200);
  });

  it('lets at most five of twenty racing wrong guesses from one source through to a password check', async () => {
    const { email } = await confirmedAccount(newAddress());
    const guesser = newAddress();

    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        send('POST', '/api/v1/auth/sign-in', { from: guesser, body: { email, password: `guess ${i}` } }),
      ),
    );

    expect(answers.filter((answer) => answer.status === 401)).toHaveLength(5);
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(15);
  });

  it('refuses the 31st request from one source address within 15 minutes, and not another address', async () => {
    const from = newAddress();
    const answers = [];
    for (let attempt = 0; attempt < 30; attempt++)
      answers.push(await send('POST', '/api/v1/auth/forgot-password', { from, body: { email: newEmail() } }));

    const refused = await send('POST', '/api/v1/auth/sign-in', { from, body: { email: newEmail(), password: PASSWORD } });
    const elsewhere = await send('POST', '/api/v1/auth/sign-in', { from: newAddress(), body: { email: newEmail(), password: PASSWORD } });

    expect(answers.every((answer) => answer.status === 202)).toBe(true);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('Rate limit exceeded');
    expect(elsewhere.status).toBe(401);
  });

  it('ignores a CloudFront viewer address sent straight to the API: a forged one buys no fresh limit', async () => {
    // Behind the edge the viewer's address counts (test/integration/edge-origin.test.ts); without it, anyone could
    // send the header, so the connection's own address counts.
    const caller = newAddress();
    const viewer = (n: number) => ({ 'cloudfront-viewer-address': `198.51.100.${n}:443` });
    for (let attempt = 0; attempt < 30; attempt++)
      await send('POST', '/api/v1/auth/forgot-password', { from: caller, body: { email: newEmail() }, headers: viewer(7) });

    const sameViewer = await send('POST', '/api/v1/auth/forgot-password', {
      from: caller,
      body: { email: newEmail() },
      headers: viewer(7),
    });
    const otherViewer = await send('POST', '/api/v1/auth/forgot-password', {
      from: caller,
      body: { email: newEmail() },
      headers: viewer(8),
    });

    expect([sameViewer.status, sameViewer.body.error]).toEqual([429, 'Rate limit exceeded']);
    expect([otherViewer.status, otherViewer.body.error]).toEqual([429, 'Rate limit exceeded']);
  });

  it('tells an unconfirmed account so only once its password is proven', async () => {
    const from = newAddress();
    const email = newEmail();
    await send('POST', '/api/v1/auth/sign-up', { from, body: { email, password: PASSWORD } });

    const wrong = await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: 'not the password' } });
    const right = await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: PASSWORD } });

    expect(wrong.status).toBe(401);
    expect(right.status).toBe(403);
    expect(right.body.error).toBe('E-mail address not confirmed: open the link we sent, or sign up again for a new one');
    expect(right.cookies).toEqual([]);
  });

  it('refuses a sign-in posted by another site', async () => {
    const from = newAddress();
    const { email } = await confirmedAccount(from);

    const answer = await send('POST', '/api/v1/auth/sign-in', {
      from,
      body: { email, password: PASSWORD },
      headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });

    expect(answer.status).toBe(403);
    expect(answer.body.error).toBe('CSRF validation failed');
    expect(answer.cookies).toEqual([]);
  });
});

describe('sessions', () => {
  it('leaves no session opened with the old password standing after a password reset it raced', async () => {
    for (let round = 0; round < 5; round++) {
      const from = newAddress();
      const browser = await confirmedAccount(from);
      await send('POST', '/api/v1/auth/forgot-password', { from, body: { email: browser.email } });
      const token = tokenOf(await latestLink(mailDir, browser.email, 'Reset your password'));

      const [reset, ...signIns] = await Promise.all([
        send('POST', '/api/v1/auth/reset-password', { from, body: { token, password: 'a brand new password' } }),
        ...[1, 2, 3, 4].map(() =>
          send('POST', '/api/v1/auth/sign-in', { from: newAddress(), body: { email: browser.email, password: PASSWORD } }),
        ),
      ]);

      expect(reset.status).toBe(200);
      expect(signIns.every((answer) => answer.status === 200 || answer.status === 401)).toBe(true);
      const cookies = [
        browser.cookie,
        ...signIns.filter((answer) => answer.status === 200).map((answer) => answer.cookies[0]?.split(';')[0]),
      ];
      for (const cookie of cookies) {
        const answer = await send('GET', '/api/v1/auth/session', { from, headers: { cookie: cookie ?? '' } });
        expect([round, answer.status, answer.body.error]).toEqual([round, 401, 'Invalid or expired session']);
      }
    }
  });

  it('refuses a session once it has expired', async () => {
    const from = newAddress();
    const browser = await confirmedAccount(from);
    await expireAll('sessions', browser.accountId);

    const answer = await send('GET', '/api/v1/keys', { from, headers: { cookie: browser.cookie } });

    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('Invalid or expired session');
  });
});

describe('POST /api/v1/auth/sign-out', () => {
  it('ends the session on the server, so the old cookie no longer works', async () => {
    const from = newAddress();
    const browser = await confirmedAccount(from);

    const answer = await send('POST', '/api/v1/auth/sign-out', { from, headers: { cookie: browser.cookie, 'x-csrftoken': browser.csrf } });
    const after = await send('GET', '/api/v1/keys', { from, headers: { cookie: browser.cookie } });

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ ok: true });
    expect(answer.cookies[0]).toMatch(/^session=; Path=\/api; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax$/);
    expect(after.status).toBe(401);
    expect(after.body.error).toBe('Invalid or expired session');
  });

  it('needs the CSRF token', async () => {
    const from = newAddress();
    const browser = await confirmedAccount(from);

    const answer = await send('POST', '/api/v1/auth/sign-out', { from, headers: { cookie: browser.cookie } });

    expect(answer.status).toBe(403);
    expect(answer.body.error).toBe('CSRF validation failed');
    expect((await send('GET', '/api/v1/keys', { from, headers: { cookie: browser.cookie } })).status).toBe(200);
  });
});

describe('POST /api/v1/auth/forgot-password and reset-password', () => {
  it('answers alike for a registered and an unknown address, and mails only the registered one', async () => {
    const from = newAddress();
    const { email } = await confirmedAccount(from);
    const unknownEmail = newEmail();

    const registered = await send('POST', '/api/v1/auth/forgot-password', { from, body: { email } });
    const unknown = await send('POST', '/api/v1/auth/forgot-password', { from, body: { email: unknownEmail } });

    expect(registered.status).toBe(202);
    expect(registered.body).toEqual({
      ok: true,
      message: 'If an account uses this address, a link to reset its password is on its way to it.',
    });
    expect(sansRequestId(unknown.body)).toEqual(sansRequestId(registered.body));
    expect(unknown.status).toBe(202);
    expect((await mailsTo(mailDir, email)).at(-1)?.subject).toBe('Reset your password');
    expect(await mailsTo(mailDir, unknownEmail)).toEqual([]);
  });

  it('sets the new password, ends every session and works only once', async () => {
    const from = newAddress();
    const browser = await confirmedAccount(from);
    const other = await send('POST', '/api/v1/auth/sign-in', { from, body: { email: browser.email, password: PASSWORD } });
    await send('POST', '/api/v1/auth/forgot-password', { from, body: { email: browser.email } });
    const token = tokenOf(await latestLink(mailDir, browser.email, 'Reset your password'));

    const reset = await send('POST', '/api/v1/auth/reset-password', { from, body: { token, password: 'a brand new password' } });
    const again = await send('POST', '/api/v1/auth/reset-password', { from, body: { token, password: 'yet another password' } });

    expect(reset.status).toBe(200);
    expect(reset.body).toEqual({ ok: true });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('Invalid or expired link');
    for (const cookie of [browser.cookie, other.cookies[0]?.split(';')[0] ?? '']) {
      expect((await send('GET', '/api/v1/keys', { from, headers: { cookie } })).status).toBe(401);
    }
    expect((await send('POST', '/api/v1/auth/sign-in', { from, body: { email: browser.email, password: PASSWORD } })).status).toBe(401);
    expect(
      (await send('POST', '/api/v1/auth/sign-in', { from, body: { email: browser.email, password: 'a brand new password' } })).status,
    ).toBe(200);
  });

  it('refuses an expired reset link and keeps the old password', async () => {
    const from = newAddress();
    const browser = await confirmedAccount(from);
    await send('POST', '/api/v1/auth/forgot-password', { from, body: { email: browser.email } });
    const token = tokenOf(await latestLink(mailDir, browser.email, 'Reset your password'));
    await expireAll('authTokens', browser.accountId);

    const answer = await send('POST', '/api/v1/auth/reset-password', { from, body: { token, password: 'a brand new password' } });

    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('Invalid or expired link');
    expect((await send('POST', '/api/v1/auth/sign-in', { from, body: { email: browser.email, password: PASSWORD } })).status).toBe(200);
  });

  it('makes every older reset link worthless once one has been used', async () => {
    const from = newAddress();
    const { email } = await confirmedAccount(from);
    await send('POST', '/api/v1/auth/forgot-password', { from, body: { email } });
    const older = tokenOf(await latestLink(mailDir, email, 'Reset your password'));
    await send('POST', '/api/v1/auth/forgot-password', { from, body: { email } });
    const newer = tokenOf(await latestLink(mailDir, email, 'Reset your password'));

    const reset = await send('POST', '/api/v1/auth/reset-password', { from, body: { token: newer, password: 'a brand new password' } });
    const stale = await send('POST', '/api/v1/auth/reset-password', { from, body: { token: older, password: 'another new password' } });

    expect(reset.status).toBe(200);
    expect([stale.status, stale.body.error]).toEqual([400, 'Invalid or expired link']);
    expect((await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: 'another new password' } })).status).toBe(401);
    expect((await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: 'a brand new password' } })).status).toBe(200);
  });

  it('lets exactly one of two racing reset links set the password', async () => {
    const from = newAddress();
    const { email } = await confirmedAccount(from);
    const tokens = [];
    for (let link = 0; link < 2; link++) {
      await send('POST', '/api/v1/auth/forgot-password', { from, body: { email } });
      tokens.push(tokenOf(await latestLink(mailDir, email, 'Reset your password')));
    }

    const answers = await Promise.all(
      tokens.map((token, i) => send('POST', '/api/v1/auth/reset-password', { from, body: { token, password: `new password ${i}` } })),
    );

    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400]);
    const winner = answers.findIndex((answer) => answer.status === 200);
    expect((await send('POST', '/api/v1/auth/sign-in', { from, body: { email, password: `new password ${winner}` } })).status).toBe(200);
  });

  it('sends at most three messages to one address per 15 minutes from one source, registered or not', async () => {
    const from = newAddress();
    const email = newEmail();

    const answers = [];
    for (let attempt = 0; attempt < 4; attempt++)
      answers.push(await send('POST', '/api/v1/auth/forgot-password', { from, body: { email } }));

    expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202, 429]);
  });

  it('leaves the owner their reset e-mails when someone else has used up theirs', async () => {
    const owner = newAddress();
    const { email } = await confirmedAccount(owner);
    const stranger = newAddress();
    const strangers = [];
    for (let attempt = 0; attempt < 4; attempt++)
      strangers.push(await send('POST', '/api/v1/auth/forgot-password', { from: stranger, body: { email } }));
    const before = (await mailsTo(mailDir, email)).length;

    const theOwner = await send('POST', '/api/v1/auth/forgot-password', { from: owner, body: { email } });

    expect(strangers.map((answer) => answer.status)).toEqual([202, 202, 202, 429]);
    expect(theOwner.status).toBe(202);
    expect((await mailsTo(mailDir, email)).length).toBe(before + 1);
  });

  it('sends at most twenty messages to one address a day, from however many sources', async () => {
    const email = newEmail();
    const answers = [];
    for (let source = 0; source < 7; source++) {
      const from = newAddress();
      for (let attempt = 0; attempt < 3; attempt++)
        answers.push(await send('POST', '/api/v1/auth/forgot-password', { from, body: { email } }));
    }

    expect(answers.slice(0, 20).every((answer) => answer.status === 202)).toBe(true);
    expect([answers[20]?.status, answers[20]?.body.error]).toEqual([429, 'Rate limit exceeded']);
    expect(answers[20]?.body.retry_after).toBeGreaterThan(900);
  });

  it("keeps the owner's reset e-mail when seven other sources have used up the address's day", async () => {
    const owner = newAddress();
    const { email } = await confirmedAccount(owner);
    const strangers = [];
    for (let source = 0; source < 7; source++) {
      const from = newAddress();
      for (let attempt = 0; attempt < 3; attempt++)
        strangers.push(await send('POST', '/api/v1/auth/forgot-password', { from, body: { email } }));
    }
    const before = (await mailsTo(mailDir, email)).length;

    const theOwner = await send('POST', '/api/v1/auth/forgot-password', { from: owner, body: { email } });
    const anotherStranger = await send('POST', '/api/v1/auth/forgot-password', { from: newAddress(), body: { email } });

    // The day's 20 messages: the sign-up's confirmation and 19 resets asked for by strangers.
    expect(strangers.filter((answer) => answer.status === 202)).toHaveLength(19);
    expect(strangers.slice(19).map((answer) => answer.status)).toEqual([429, 429]);
    expect(theOwner.status).toBe(202);
    expect((await mailsTo(mailDir, email)).map((mail) => mail.subject).slice(before)).toEqual(['Reset your password']);
    expect(anotherStranger.status).toBe(429);
  });
});

describe('GET /api/v1/account and /api/v1/account/activity', () => {
  it('shows the balance, deposits, whether a deposit is still required, and spending per day', async () => {
    const from = newAddress();
    const browser = await confirmedAccount(from);
    const before = await send('GET', '/api/v1/account', { from, headers: { cookie: browser.cookie } });
    await deposit(runtime.deps, browser.accountId, 12_500_000);
    await charge(runtime.deps, browser.accountId, 2_000_000, 'operator charge');

    const account = await send('GET', '/api/v1/account', { from, headers: { cookie: browser.cookie } });
    const activity = await send('GET', '/api/v1/account/activity', { from, headers: { cookie: browser.cookie } });

    expect(before.body.deposit_required).toBe(true);
    expect(account.body).toEqual({
      account_id: browser.accountId,
      email: browser.email,
      confirmed: true,
      billing_paused: false,
      balance_usd: '10.50',
      balance_micros: 10_500_000,
      total_deposited_usd: '12.50',
      total_deposited_micros: 12_500_000,
      deposit_required: false,
      created_at: expect.any(String),
    });
    expect(activity.body.entries.map((entry: { kind: string; amount_usd: string }) => [entry.kind, entry.amount_usd]).sort()).toEqual([
      ['charge', '-2.00'],
      ['deposit', '12.50'],
    ]);
    expect(activity.body.spending_by_day).toHaveLength(30);
    expect(activity.body.spending_by_day.at(-1)).toEqual({
      date: new Date().toISOString().slice(0, 10),
      amount_usd: '2.00',
      amount_micros: 2_000_000,
    });
    expect(activity.body.spending_by_day.slice(0, -1).every((day: { amount_micros: number }) => day.amount_micros === 0)).toBe(true);
  });

  it('serves the instance routes to the console session, its CSRF token required on POST and DELETE', async () => {
    const from = newAddress();
    const browser = await confirmedAccount(from);
    const cookie = { cookie: browser.cookie };
    const withToken = { ...cookie, 'x-csrftoken': browser.csrf };

    const listed = await send('GET', '/api/v1/instances', { from, headers: cookie });
    const actionWithoutToken = await send('POST', '/api/v1/instances/999999/actions', { from, headers: cookie, body: { type: 'reboot' } });
    const action = await send('POST', '/api/v1/instances/999999/actions', { from, headers: withToken, body: { type: 'reboot' } });
    const deleteWithoutToken = await send('DELETE', '/api/v1/instances/999999', { from, headers: cookie });
    const removed = await send('DELETE', '/api/v1/instances/999999', { from, headers: withToken });
    const create = await send('POST', '/api/v1/instances', {
      from,
      headers: withToken,
      body: { project_name: 'x', flavor: 's-1vcpu-2gb' },
    });

    expect([listed.status, listed.body]).toEqual([200, []]);
    expect([actionWithoutToken.status, actionWithoutToken.body.error]).toEqual([403, 'CSRF validation failed']);
    expect([action.status, action.body.error]).toEqual([404, 'Instance not found']);
    expect([deleteWithoutToken.status, deleteWithoutToken.body.error]).toEqual([403, 'CSRF validation failed']);
    expect([removed.status, removed.body.error]).toEqual([404, 'Instance not found']);
    // Creating stays an API key's: the session is not a way in there.
    expect([create.status, create.body.error]).toEqual([401, 'Missing or malformed Authorization header']);
  });

  it("answers 404 to a session for another account's instance, on get, action and delete alike", async () => {
    const from = newAddress();
    const browser = await confirmedAccount(from);
    const other = await runtime.newAccount();
    const created = await runtime.call('POST', '/api/v1/instances', {
      apiKey: other.apiKey,
      body: { project_name: 'theirs', flavor: 's-1vcpu-2gb' },
    });
    const path = `/api/v1/instances/${created.body.instance_id}`;
    const headers = { cookie: browser.cookie, 'x-csrftoken': browser.csrf };

    const answers = [
      await send('GET', path, { from, headers }),
      await send('POST', `${path}/actions`, { from, headers, body: { type: 'power_off' } }),
      await send('DELETE', path, { from, headers }),
      await send('GET', '/api/v1/instances', { from, headers }),
    ];

    expect(answers.slice(0, 3).map((answer) => [answer.status, answer.body.error])).toEqual([
      [404, 'Instance not found'],
      [404, 'Instance not found'],
      [404, 'Instance not found'],
    ]);
    expect(answers[3]?.body).toEqual([]);
    expect((await runtime.call('GET', path, { apiKey: other.apiKey })).body.status).not.toBe('deleting');
  });

  it('needs a session or an API key, and answers what an API client needs without either', async () => {
    const answer = await send('GET', '/api/v1/account', { from: newAddress() });

    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('Missing or malformed Authorization header');
  });
});

/**
 * The two-sided p-value of a sign test: how likely at least this lopsided a split of the pairs' differences would be
 * if neither kind of request were faster than the other.
 */
function signTestP(differences: readonly number[]): number {
  const nonZero = differences.filter((difference) => difference !== 0);
  const n = nonZero.length;
  const larger = Math.max(nonZero.filter((difference) => difference > 0).length, nonZero.filter((difference) => difference < 0).length);
  let tail = 0;
  let coefficient = 1;
  for (let k = 0; k <= n; k++) {
    if (k >= larger) tail += coefficient / 2 ** n;
    coefficient = (coefficient * (n - k)) / (k + 1);
  }
  return Math.min(1, 2 * tail);
}

describe('answer times', () => {
  const PAIRS = 40;
  /** 40 pairs of requests, each hashing a password and writing an e-mail: a minute or more on a busy machine. */
  const ANSWER_TIMES_TIMEOUT_MS = 180_000;

  /**
   * Times a request about a registered (not yet confirmed) address against the same request about a new one, in
   * interleaved pairs (the order alternating, each request from a fresh source address, each after the previous
   * one's e-mail was written), and returns the p-value of a sign test on the pairs' differences. The addresses share
   * the work, so none comes near its daily allowance of e-mails.
   */
  async function pairedTimes(path: string, body: (email: string) => object): Promise<{ p: number; known: number; unknown: number }> {
    const registered: string[] = [];
    for (let account = 0; account < Math.ceil(PAIRS / 15); account++) {
      registered.push(newEmail());
      await send('POST', '/api/v1/auth/sign-up', { from: newAddress(), body: { email: registered.at(-1), password: PASSWORD } });
    }
    const differences = [];
    const medians = { known: [] as number[], unknown: [] as number[] };
    for (let pair = 0; pair < PAIRS; pair++) {
      const known = () => send('POST', path, { from: newAddress(), body: body(registered[pair % registered.length]!) });
      const unknown = () => send('POST', path, { from: newAddress(), body: body(newEmail()) });
      const [first, second] = pair % 2 === 0 ? [await known(), await unknown()] : [await unknown(), await known()];
      const [knownAnswer, unknownAnswer] = pair % 2 === 0 ? [first, second] : [second, first];
      expect([knownAnswer.status, unknownAnswer.status]).toEqual([202, 202]);
      differences.push(knownAnswer.elapsedMs - unknownAnswer.elapsedMs);
      medians.known.push(knownAnswer.elapsedMs);
      medians.unknown.push(unknownAnswer.elapsedMs);
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    return { p: signTestP(differences), known: median(medians.known), unknown: median(medians.unknown) };
  }

  // At 0.001 a fair test fails one run in a thousand; a path that does more work for one kind is slower in nearly
  // every pair, which puts p far below it.
  it(
    'answers forgot-password about a registered address no slower or faster than about an unknown one',
    async () => {
      const timing = await pairedTimes('/api/v1/auth/forgot-password', (email) => ({ email }));

      expect(timing.p, JSON.stringify(timing)).toBeGreaterThan(0.001);
    },
    ANSWER_TIMES_TIMEOUT_MS,
  );

  it(
    'answers a sign-up with a taken address no slower or faster than with a new one',
    async () => {
      const timing = await pairedTimes('/api/v1/auth/sign-up', (email) => ({ email, password: PASSWORD }));

      expect(timing.p, JSON.stringify(timing)).toBeGreaterThan(0.001);
    },
    ANSWER_TIMES_TIMEOUT_MS,
  );
});
