// Logging is turned all the way up (every event and every response body) before any handler is loaded, so that
// this file proves redaction where it matters most; hence the dynamic imports below.
process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
process.env.POWERTOOLS_LOGGER_LOG_EVENT = 'true';

export {};

const { useTestRuntime } = await import('../support/runtime');
const { openSession } = await import('../../shared/domain/accounts');
const { captureStdoutLines } = await import('../support/stdout');

const runtime = useTestRuntime();

describe('log redaction', () => {
  it('keeps keys, sessions, CSRF tokens, root passwords and private keys out of every log line', async () => {
    const account = await runtime.newAccount();
    const { session, csrfToken } = await openSession(account.accountId);
    const secrets: string[] = [account.apiKey, session, csrfToken];

    const lines = await captureStdoutLines(async () => {
      const created = await runtime.call('POST', '/api/v1/instances', {
        apiKey: account.apiKey,
        body: { project_name: 'logged', flavor: 's-1vcpu-2gb' },
      });
      secrets.push(created.body.root_password, created.body.ssh_key.private_key.split('\n')[2]);
      await runtime.call('GET', `/api/v1/instances/${created.body.instance_id}`, { apiKey: account.apiKey });
      const host = new URL(runtime.baseUrl).host;
      const key = await runtime.call('POST', '/api/v1/keys', {
        headers: { cookie: `session=${session}`, 'x-csrftoken': csrfToken, origin: `http://${host}` },
      });
      secrets.push(key.body.full_key);
      await runtime.call('GET', '/api/v1/instances', { headers: { authorization: `Bearer ${key.body.full_key}` } });
    });

    const logged = lines.join('\n');
    expect(lines.filter((line) => line.includes('"message":"response"')).length).toBeGreaterThanOrEqual(4);
    expect(logged).toContain('[REDACTED]');
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(10);
      expect(logged).not.toContain(secret);
    }
  });
});
