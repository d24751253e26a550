// Logging is turned all the way up (every event and every response body) before any handler is loaded, so that
// this file proves redaction where it matters most; hence the dynamic imports below.
process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
process.env.POWERTOOLS_LOGGER_LOG_EVENT = 'true';

export {};

const { mkdtempSync, rmSync } = await import('node:fs');
const { createHmac, randomBytes } = await import('node:crypto');
const { tmpdir } = await import('node:os');
const { join } = await import('node:path');
const { useTestRuntime } = await import('../support/runtime');
const { captureLogLines } = await import('../support/stdout');
const { latestLink, tokenOf } = await import('../support/mailbox');
const { eventually, startReceiver } = await import('../support/receiver');
const { deposit } = await import('../../shared/domain/billing');
const { usdToMicros } = await import('../../shared/domain/accounts');
const { routes } = await import('../../shared/routes');
const { rawToolCall } = await import('../support/mcp');

const mailDir = mkdtempSync(join(tmpdir(), 'redaction-mail-'));
const runtime = useTestRuntime({ mailDir });
afterAll(() => rmSync(mailDir, { recursive: true, force: true }));

/** The base64 lines of a private key's body: each one alone is a piece of the key. */
const privateKeyLines = (pem: string) => pem.split('\n').filter((line) => line.length >= 40 && !line.startsWith('-----'));

describe('log redaction at DEBUG', () => {
  it('keeps every secret the routes take or give out of every log line, through every route', async () => {
    const receiver = await startReceiver();
    onTestFinished(() => receiver.close());
    const email = `${randomBytes(4).toString('hex')}@example.com`;
    const password = `pw ${randomBytes(12).toString('base64url')}`;
    const newPassword = `pw ${randomBytes(12).toString('base64url')}`;
    const secrets: [string, string][] = [
      ['password', password],
      ['new password', newPassword],
      ...runtime.upstreamToken.split(',').map((token): [string, string] => ['upstream token', token]),
    ];
    const exercised: string[] = [];
    let session = '';
    let csrfToken = '';
    let apiKey = '';
    const browser = () => ({
      origin: new URL(runtime.baseUrl).origin,
      ...(session ? { cookie: `session=${session}`, 'x-csrftoken': csrfToken } : {}),
    });
    /** One request of the named route, which must answer `status`. */
    const call = async (name: string, status: number, method: string, path: string, options: Parameters<typeof runtime.call>[2]) => {
      const response = await runtime.call(method, path, options);
      expect([name, response.status]).toEqual([name, status]);
      exercised.push(name);
      return response;
    };
    const bearer = (body?: unknown) => ({ apiKey, body });

    const lines = await captureLogLines(async () => {
      await call('AuthSignUp', 202, 'POST', '/api/v1/auth/sign-up', { headers: browser(), body: { email, password } });
      const confirmation = tokenOf(await latestLink(mailDir, email, 'Confirm your e-mail address'));
      secrets.push(['confirmation token', confirmation]);
      await call('AuthConfirm', 200, 'POST', '/api/v1/auth/confirm', { headers: browser(), body: { token: confirmation, password } });
      const signedIn = await call('AuthSignIn', 200, 'POST', '/api/v1/auth/sign-in', { headers: browser(), body: { email, password } });
      session = /^session=([^;]+)/.exec(signedIn.headers.getSetCookie()[0] ?? '')?.[1] ?? '';
      csrfToken = signedIn.body.csrf_token;
      secrets.push(['session token', session], ['CSRF token', csrfToken]);
      await call('AuthSession', 200, 'GET', '/api/v1/auth/session', { headers: browser() });
      await deposit(runtime.deps, signedIn.body.account_id, usdToMicros('50'));
      await call('GetAccount', 200, 'GET', '/api/v1/account', { headers: browser() });
      await call('GetAccountActivity', 200, 'GET', '/api/v1/account/activity', { headers: browser() });

      const key = await call('CreateKey', 201, 'POST', '/api/v1/keys', { headers: browser(), body: { name: 'logged' } });
      apiKey = key.body.full_key;
      secrets.push(['API key', apiKey]);
      await call('ListKeys', 200, 'GET', '/api/v1/keys', { headers: browser() });

      secrets.push(['payment provider key', runtime.payments.secretKey], ['payment webhook secret', runtime.payments.webhookSecret]);
      const topUp = await call('CreateTopUp', 201, 'POST', '/api/v1/billing/top-ups', {
        headers: browser(),
        body: { amount_usd: 10, save_card: true },
      });
      await fetch(`${topUp.body.checkout_url}/pay`, { method: 'POST', redirect: 'manual' });
      await eventually(
        async () =>
          (await call('GetTopUp', 200, 'GET', `/api/v1/billing/top-ups/${topUp.body.top_up_id}`, bearer())).body.status === 'paid',
        'the top-up to be credited',
      );
      await runtime.payments.settled();
      const completed = runtime.payments.events.find((event) => event.type === 'checkout.session.completed');
      const replay = await fetch(`${runtime.payments.url}/_sim/events/${completed?.id}/resend`, { method: 'POST' });
      expect(replay.status).toBe(200);
      const expired = JSON.stringify({ id: 'evt_logged', type: 'customer.created', data: { object: {} } });
      const t = Math.floor(Date.now() / 1000);
      const signature = createHmac('sha256', runtime.payments.webhookSecret).update(`${t}.${expired}`).digest('hex');
      await call('PaymentWebhook', 200, 'POST', '/api/v1/billing/stripe/webhook', {
        rawBody: expired,
        headers: { 'stripe-signature': `t=${t},v1=${signature}` },
      });
      await call('GetBilling', 200, 'GET', '/api/v1/billing', bearer());
      await call('SetAutoRecharge', 200, 'POST', '/api/v1/billing/auto-recharge', {
        headers: browser(),
        body: { enabled: false, threshold_usd: 5, amount_usd: 10 },
      });

      const userDataToken = `udtok${randomBytes(12).toString('hex')}`;
      const created = await call(
        'CreateInstance',
        202,
        'POST',
        '/api/v1/instances',
        bearer({ project_name: 'logged', flavor: 's-1vcpu-2gb', user_data: `#!/bin/sh\necho ${userDataToken} > /root/token\n` }),
      );
      secrets.push(['user data', userDataToken]);
      const instancePath = `/api/v1/instances/${created.body.instance_id}`;
      secrets.push(
        ['root password', created.body.root_password],
        ...privateKeyLines(created.body.ssh_key.private_key).map((line): [string, string] => ['private key', line]),
      );
      await eventually(async () => (await call('GetInstance', 200, 'GET', instancePath, bearer())).body.status === 'active', 'active');
      await call('ListInstances', 200, 'GET', '/api/v1/instances', bearer());
      await call('UpdateInstance', 200, 'PATCH', instancePath, bearer({ project_name: 'logged-renamed', labels: { env: 'prod' } }));
      const viaMcp = await rawToolCall(runtime, apiKey, 'get_instance', { instance_id: created.body.instance_id });
      expect([viaMcp.status, viaMcp.result?.structuredContent?.root_password]).toEqual([200, created.body.root_password]);
      exercised.push('Mcp');
      await call('McpResourceMetadata', 200, 'GET', '/.well-known/oauth-protected-resource/mcp', {});
      const action = await call('InstanceAction', 200, 'POST', `${instancePath}/actions`, bearer({ type: 'reboot' }));
      await eventually(
        async () => (await call('GetJob', 200, 'GET', `/api/v1/jobs/${action.body.job_id}`, bearer())).body.status !== 'running',
        'the reboot',
      );
      await call('ListInstanceJobs', 200, 'GET', `${instancePath}/jobs`, bearer());

      const webhook = await call(
        'CreateWebhook',
        201,
        'POST',
        '/api/v1/webhooks',
        bearer({ url: receiver.url, events: ['job.succeeded'] }),
      );
      secrets.push(['webhook signing secret', webhook.body.secret]);
      const hookPath = `/api/v1/webhooks/${webhook.body.id}`;
      await call('ListWebhooks', 200, 'GET', '/api/v1/webhooks', bearer());
      await call('TestWebhook', 202, 'POST', `${hookPath}/test`, bearer());
      await eventually(() => receiver.received.length > 0, 'the test delivery');
      await call('ListWebhookDeliveries', 200, 'GET', `${hookPath}/deliveries`, bearer());
      await call('DeleteWebhook', 200, 'DELETE', hookPath, bearer());

      const deleted = await call('DeleteInstance', 200, 'DELETE', instancePath, bearer());
      await runtime.waitForJob(apiKey, deleted.body.job_id);
      await call('RevokeKey', 200, 'DELETE', `/api/v1/keys/${key.body.id}`, { headers: browser() });
      await call('OpenApiDocument', 200, 'GET', '/api/v1/openapi.json', {});
      await call('NotFound', 404, 'GET', '/api/v1/nothing-here', {});
      await call('AuthSignOut', 200, 'POST', '/api/v1/auth/sign-out', { headers: browser() });

      await call('AuthForgotPassword', 202, 'POST', '/api/v1/auth/forgot-password', { headers: browser(), body: { email } });
      const reset = tokenOf(await latestLink(mailDir, email, 'Reset your password'));
      secrets.push(['reset token', reset]);
      await call('AuthResetPassword', 200, 'POST', '/api/v1/auth/reset-password', {
        headers: browser(),
        body: { token: reset, password: newPassword },
      });
    });

    expect(new Set(exercised)).toEqual(new Set(routes.map((route) => route.name)));
    // Each request logged its event and its response: DEBUG was on for all of them.
    expect(lines.filter((line) => line.includes('"message":"response"')).length).toBeGreaterThanOrEqual(exercised.length);
    expect(lines.join('\n')).toContain('[REDACTED]');
    const leaks = secrets.flatMap(([kind, secret]) => {
      expect([kind, secret.length > 10]).toEqual([kind, true]);
      // A prefixed secret counts as leaked by its random part alone.
      const random = secret.replace(/^(?:svcmcp_|whsec_|dop_v1_)/, '');
      return lines.filter((line) => line.includes(random)).map((line) => `${kind} in ${line.slice(0, 200)}`);
    });
    expect(leaks).toEqual([]);
  });
});
