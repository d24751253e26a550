// Tracing is switched on as it is in Lambda (an execution environment, a trace header, a daemon address) before any
// handler is loaded, so that the X-Ray segments the handlers emit can be caught here; hence the dynamic imports.
import { createSocket } from 'node:dgram';

const daemon = createSocket('udp4');
const datagrams: string[] = [];
daemon.on('message', (message) => datagrams.push(message.toString()));
await new Promise<void>((resolve) => daemon.bind(0, '127.0.0.1', () => resolve()));
Object.assign(process.env, {
  POWERTOOLS_TRACE_ENABLED: 'true',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
  LAMBDA_TASK_ROOT: '/var/task',
  _HANDLER: 'index.handler',
  AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
  AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR',
  _X_AMZN_TRACE_ID: 'Root=1-6740f1a0-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1',
});

const { useTestRuntime } = await import('../support/runtime');
const { openSession } = await import('../../shared/domain/accounts');

const runtime = useTestRuntime();
afterAll(() => daemon.close());

/** Handler subsegments named anywhere in a segment document: overlapping local invocations nest one in another. */
function countHandlerSegments(segment: unknown): number {
  if (segment === null || typeof segment !== 'object') return 0;
  const { name, subsegments } = segment as { name?: unknown; subsegments?: unknown };
  const nested = Array.isArray(subsegments) ? subsegments.reduce((sum: number, child) => sum + countHandlerSegments(child), 0) : 0;
  return (name === '## index.handler' ? 1 : 0) + nested;
}

/** The handler subsegments received so far (each datagram is a header line, then one segment document). */
function handlerSegments(): number {
  return datagrams.reduce((sum, datagram) => sum + countHandlerSegments(JSON.parse(datagram.split('\n')[1] ?? 'null')), 0);
}

describe('X-Ray tracing', () => {
  it('sends no root password, private key, API key, session or CSRF token in any segment, on every route', async () => {
    const account = await runtime.newAccount();
    const { session, csrfToken } = await openSession(runtime.deps, account.accountId);
    const page = { cookie: `session=${session}`, 'x-csrftoken': csrfToken, origin: runtime.baseUrl };
    const idempotent = { 'idempotency-key': 'trace-create-1' };
    const createBody = { project_name: 'traced', flavor: 's-1vcpu-2gb' };

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey: account.apiKey, body: createBody, headers: idempotent });
    const replayed = await runtime.call('POST', '/api/v1/instances', { apiKey: account.apiKey, body: createBody, headers: idempotent });
    const id = created.body.instance_id;
    await runtime.waitForStatus(account.apiKey, id, ['active']);
    const listed = await runtime.call('GET', '/api/v1/instances', { apiKey: account.apiKey });
    const action = await runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey: account.apiKey, body: { type: 'reboot' } });
    await runtime.waitForJob(account.apiKey, action.body.job_id);
    await runtime.call('GET', `/api/v1/jobs/${action.body.job_id}`, { apiKey: account.apiKey });
    const key = await runtime.call('POST', '/api/v1/keys', { body: { name: 'traced' }, headers: page });
    await runtime.call('GET', '/api/v1/keys', { headers: { cookie: page.cookie } });
    await runtime.call('DELETE', `/api/v1/keys/${key.body.id}`, { headers: page });
    await runtime.call('DELETE', `/api/v1/instances/${id}`, { apiKey: account.apiKey });
    await runtime.call('GET', '/api/v1/openapi.json');
    await runtime.call('GET', '/api/v1/nowhere');
    // Segments leave by UDP after each response: wait for them (or give up after 10 s). Locally every handler shares
    // one process and one facade segment, and a handler overlapping a workflow step may lose its own subsegment, so
    // the count below asks for some of the invocations above, not each one.
    for (let waited = 0; handlerSegments() < 11 && waited < 10_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const secrets = [
      created.body.root_password,
      ...created.body.ssh_key.private_key.split('\n').slice(1, -2),
      account.apiKey,
      key.body.full_key,
      session,
      csrfToken,
    ];
    expect([created.status, replayed.status, listed.body[0].root_password, key.status]).toEqual([
      202,
      202,
      created.body.root_password,
      201,
    ]);
    expect(created.body.ssh_key.private_key).toContain('-----BEGIN OPENSSH PRIVATE KEY-----');
    // Some of the invocations above were traced (locally a few are lost to overlap), so a silent tracer cannot pass.
    expect(handlerSegments()).toBeGreaterThanOrEqual(4);
    const traced = datagrams.join('\n');
    // The requests' DynamoDB calls were traced too, under the table they read.
    expect(traced).toMatch(/"name":"DynamoDB","[^\n]*"namespace":"aws"/);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(10);
      expect(traced).not.toContain(secret);
    }
    expect(traced).not.toContain('PRIVATE KEY');
    expect(traced).not.toContain('root_password');
  });
});
