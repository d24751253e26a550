import { installDynamoCallRecorder, recordDynamoCalls, type DynamoCall } from '../../bench/dynamo-calls';
import { openSession } from '../../shared/domain/accounts';
import { generateApiKey } from '../../shared/model/api-keys';
import { useTestRuntime } from '../support/runtime';

const SECRET = 'edge-origin-secret-for-tests';
const calls: DynamoCall[] = [];
/** The service as deployed behind the edge: the API functions know the secret CloudFront sends. */
const runtime = useTestRuntime({
  env: { EDGE_ORIGIN_SECRET: SECRET, FAILED_AUTH_LIMIT: '' },
  aroundInvocation: (_route, invoke) => recordDynamoCalls(calls, invoke),
});
beforeAll(() => installDynamoCallRecorder(runtime.deps));

const viaEdge = (viewer = '203.0.113.10:50000') => ({ 'x-origin-verify': SECRET, 'cloudfront-viewer-address': viewer });

/** Without the contract check of runtime.call: a direct call's 403 is not part of the public interface. */
async function direct(method: string, path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${runtime.baseUrl}${path}`, { method, headers });
  return { status: response.status, body: await response.json(), headers: response.headers };
}

describe('behind the edge', () => {
  it('refuses every route called without the origin header with 403, before any database call', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    const { session } = await openSession(runtime.deps, accountId);
    calls.length = 0;

    const answers = await Promise.all([
      direct('GET', '/api/v1/instances', { authorization: `Bearer ${apiKey}` }),
      direct('POST', '/api/v1/instances', { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }),
      direct('GET', '/api/v1/jobs/00000000-0000-0000-0000-000000000000', { authorization: `Bearer ${apiKey}` }),
      direct('GET', '/api/v1/webhooks', { authorization: `Bearer ${apiKey}` }),
      direct('GET', '/api/v1/keys', { cookie: `session=${session}` }),
      direct('GET', '/api/v1/openapi.json'),
      direct('GET', '/api/v1/nowhere'),
      direct('GET', '/api/v1/instances', { authorization: `Bearer ${apiKey}`, 'x-origin-verify': 'a guess' }),
    ]);

    for (const answer of answers) {
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({ error: 'Forbidden', request_id: expect.any(String) });
    }
    expect(calls).toEqual([]);
  });

  it('serves the same requests when they carry the origin header, as CloudFront sends them', async () => {
    const { accountId, apiKey } = await runtime.newAccount();
    const { session } = await openSession(runtime.deps, accountId);

    const list = await runtime.call('GET', '/api/v1/instances', { apiKey, headers: viaEdge() });
    const keys = await runtime.call('GET', '/api/v1/keys', { headers: { ...viaEdge(), cookie: `session=${session}` } });
    const document = await runtime.call('GET', '/api/v1/openapi.json', { headers: viaEdge() });
    const nowhere = await runtime.call('GET', '/api/v1/nowhere', { headers: viaEdge() });

    expect([list.status, keys.status, document.status, nowhere.status]).toEqual([200, 200, 200, 404]);
    expect(document.body.openapi).toBe('3.1.0');
  });

  it("limits failed authentications by the viewer's address, not by CloudFront's", async () => {
    const forged = () => ({ authorization: `Bearer ${generateApiKey().fullKey}` });

    const first = [];
    for (let i = 0; i < 20; i++)
      first.push(await runtime.call('GET', '/api/v1/instances', { headers: { ...viaEdge('198.51.100.20:1000'), ...forged() } }));
    const over = await runtime.call('GET', '/api/v1/instances', { headers: { ...viaEdge('198.51.100.20:2000'), ...forged() } });
    const otherViewer = await runtime.call('GET', '/api/v1/instances', { headers: { ...viaEdge('198.51.100.21:1000'), ...forged() } });

    expect(first.map((answer) => answer.status)).toEqual(Array.from({ length: 20 }, () => 401));
    expect([over.status, over.headers.get('ratelimit-policy')]).toEqual([429, '"failed-auth";q=20;w=60']);
    expect([otherViewer.status, otherViewer.body.error]).toEqual([401, 'Invalid or revoked API key']);
  });
});
