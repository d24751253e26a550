import { route } from '../../shared/http/route';
import { assertCameThroughEdge } from '../../shared/http/edge-origin';
import { addressKey, CACHE_MAX_ENTRIES, ExpiringEntries, NEGATIVE_CACHE_TTL_MS, sourceAddressOf } from '../../shared/http/flood-guard';
import { unitDeps } from '../support/unit-deps';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/** The edge and flood checks of a runtime configured with `secret` (none: the local runtime). */
function load(secret: string | undefined) {
  const deps = unitDeps(secret === undefined ? {} : { EDGE_ORIGIN_SECRET: secret });
  return {
    assertCameThroughEdge: (request: APIGatewayProxyEventV2) => assertCameThroughEdge(deps, request),
    sourceAddressOf: (request: APIGatewayProxyEventV2) => sourceAddressOf(deps, request),
    addressKey,
  };
}

const lambdaContext = {
  callbackWaitsForEmptyEventLoop: false,
  functionName: 'probe',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:000000000000:function:probe',
  memoryLimitInMB: '256',
  awsRequestId: 'req-1',
  logGroupName: 'probe',
  logStreamName: 'probe',
  getRemainingTimeInMillis: () => 10_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
};

function event(headers: Record<string, string>, sourceIp = '198.51.100.7'): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: 'GET /api/v1/instances',
    rawPath: '/api/v1/instances',
    rawQueryString: '',
    headers: { ...headers },
    requestContext: {
      accountId: '000000000000',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method: 'GET', path: '/api/v1/instances', protocol: 'HTTP/1.1', sourceIp, userAgent: 'test' },
      requestId: 'req-1',
      routeKey: 'GET /api/v1/instances',
      stage: '$default',
      time: '',
      timeEpoch: 0,
    },
    isBase64Encoded: false,
  };
}

describe('the edge origin check', () => {
  it('lets everything through when no secret is configured (the local runtime), and drops the header', async () => {
    const { assertCameThroughEdge } = load(undefined);
    const request = event({ 'x-origin-verify': 'anything' });

    expect(() => assertCameThroughEdge(request)).not.toThrow();
    expect(() => assertCameThroughEdge(event({}))).not.toThrow();
    expect(request.headers).toEqual({});
  });

  it.each([
    ['no header (the execute-api endpoint called directly)', {}],
    ['a wrong value', { 'x-origin-verify': 'guess' }],
    ['the value with a byte more', { 'x-origin-verify': 'edge-secret-value!' }],
    ['an empty value', { 'x-origin-verify': '' }],
  ])('refuses %s with 403 "Forbidden" when a secret is configured', async (_, headers) => {
    const { assertCameThroughEdge } = load('edge-secret-value');

    expect(() => assertCameThroughEdge(event(headers))).toThrow(expect.objectContaining({ kind: 'forbidden', message: 'Forbidden' }));
  });

  it('accepts the configured value and takes it out of the event', async () => {
    const { assertCameThroughEdge } = load('edge-secret-value');
    const request = event({ 'x-origin-verify': 'edge-secret-value', accept: 'application/json' });

    expect(() => assertCameThroughEdge(request)).not.toThrow();
    expect(request.headers).toEqual({ accept: 'application/json' });
  });

  it('answers a public route 403 with the request id before its handler runs', async () => {
    const handler = vi.fn(async () => ({ statusCode: 200, headers: {}, body: '{}' }));
    const probe = route({ name: 'Probe', method: 'GET', path: '/probe', entry: 'probe.ts', auth: 'none', access: {} }, handler).forRuntime(
      unitDeps({ EDGE_ORIGIN_SECRET: 'edge-secret-value' }),
    );
    const context = () => ({ ...lambdaContext, request: { windows: [] } });

    const refused = await probe(event({}), context());
    const served = await probe(event({ 'x-origin-verify': 'edge-secret-value' }), context());

    expect(refused.statusCode).toBe(403);
    expect(JSON.parse(refused.body!)).toEqual({ error: 'Forbidden', request_id: 'req-1' });
    expect(refused.headers).toMatchObject({ 'Cache-Control': 'no-store', 'X-Request-Id': 'req-1' });
    expect(handler).toHaveBeenCalledTimes(1);
    expect(served.statusCode).toBe(200);
  });
});

describe('source addresses', () => {
  it.each([
    ['198.51.100.7', '198.51.100.7'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['2001:db8:aa:bb:1:2:3:4', '2001:db8:aa:bb::/64'],
    ['2001:db8:aa:bb:ffff:ffff:ffff:ffff', '2001:db8:aa:bb::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['not an address', 'not an address'],
    ['', 'unknown'],
  ])('counts %s as %s', async (raw, key) => {
    const { addressKey } = load(undefined);

    expect(addressKey(raw)).toBe(key);
  });

  it('ignores CloudFront-Viewer-Address without an edge: a client could send it to pose as anyone', async () => {
    const { sourceAddressOf } = load(undefined);

    expect(sourceAddressOf(event({ 'cloudfront-viewer-address': '203.0.113.9:443' }, '198.51.100.7'))).toBe('198.51.100.7');
  });

  it.each([
    ['203.0.113.9:46532', '203.0.113.9'],
    ['2001:0db8:85a3:0000:0000:8a2e:0370:7334:46532', '2001:db8:85a3:0::/64'],
  ])('behind the edge, takes the viewer address from CloudFront-Viewer-Address %s', async (header, key) => {
    const { sourceAddressOf } = load('edge-secret-value');

    expect(sourceAddressOf(event({ 'cloudfront-viewer-address': header }, '130.176.0.1'))).toBe(key);
    expect(sourceAddressOf(event({}, '130.176.0.1'))).toBe('130.176.0.1');
  });
});

describe('ExpiringEntries (the negative cache and the blocked addresses)', () => {
  it('holds an entry until its expiry, not a millisecond longer', async () => {
    const entries = new ExpiringEntries(10);
    entries.set('key#a', 1_000 + 5_000);

    expect(entries.has('key#a', 1_000)).toBe(true);
    expect(entries.has('key#a', 5_999)).toBe(true);
    expect(entries.has('key#a', 6_000)).toBe(false);
    expect(entries.size).toBe(0);
  });

  it('keeps at most its bound, dropping the oldest first', async () => {
    const entries = new ExpiringEntries(3);
    for (const key of ['a', 'b', 'c', 'd']) entries.set(key, 10_000);

    expect(entries.size).toBe(3);
    expect(['a', 'b', 'c', 'd'].map((key) => entries.has(key, 0))).toEqual([false, true, true, true]);
  });

  it('caches for 5 seconds, at most 10,000 entries', async () => {
    expect([NEGATIVE_CACHE_TTL_MS, CACHE_MAX_ENTRIES]).toEqual([5_000, 10_000]);
  });
});
