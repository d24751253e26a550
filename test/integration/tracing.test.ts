import { createSocket } from 'node:dgram';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { daemonAddress, parseTraceHeader, traceHandler, Tracer } from '../../shared/tracing';

// A real X-Ray daemon stand-in (a UDP socket), a real HTTP server answering both the DynamoDB client and fetch,
// and the environment Lambda gives a traced invocation.
const daemon = createSocket('udp4');
const documents: Record<string, unknown>[] = [];
daemon.on('message', (message) => {
  const [header, body] = message.toString().split('\n');
  expect(header).toBe('{"format":"json","version":1}');
  documents.push(JSON.parse(body ?? 'null') as Record<string, unknown>);
});
const received: IncomingHttpHeaders[] = [];
const server = createServer((request, response) => {
  received.push(request.headers);
  request.resume();
  request.on('end', () => {
    const dynamo = request.headers['x-amz-target'] !== undefined;
    response.writeHead(dynamo ? 200 : 503, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'req-1' });
    response.end(dynamo ? '{"Item":{"id":{"S":"a"},"root_password":{"S":"hunter2"}}}' : '{}');
  });
});
const ROOT = '1-6740f1a0-0123456789abcdef01234567';
const LAMBDA_PARENT = '53995c3f42cd8ad8';
const saved = { ...process.env };
let endpoint = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => daemon.bind(0, '127.0.0.1', () => resolve()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  Object.assign(process.env, {
    POWERTOOLS_TRACE_ENABLED: 'true',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    _HANDLER: 'index.handler',
    AWS_REGION: 'us-east-1',
    AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
    _X_AMZN_TRACE_ID: `Root=${ROOT};Parent=${LAMBDA_PARENT};Sampled=1`,
  });
});
afterAll(() => {
  process.env = saved;
  daemon.close();
  server.close();
});
beforeEach(() => {
  documents.length = 0;
  received.length = 0;
});

const context = { awsRequestId: 'r' } as Context;
const arrived = async (count: number) => {
  for (let waited = 0; documents.length < count && waited < 5_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
  return documents;
};

function tracedHandler(tracer: Tracer, work: () => Promise<unknown>) {
  return middy<unknown, unknown>()
    .use(traceHandler(tracer))
    .handler(async () => {
      await work();
      return { statusCode: 200, body: '{"root_password":"hunter2"}' };
    });
}

describe('X-Ray tracing without the X-Ray SDK', () => {
  it('files the handler, its DynamoDB call and its fetch under the invocation, and passes the trace on', async () => {
    const tracer = new Tracer({ serviceName: 'svc' });
    const client = tracer.captureAWSv3Client(
      new DynamoDBClient({ region: 'us-east-1', endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
    );
    const handler = tracedHandler(tracer, async () => {
      await client.send(new GetItemCommand({ TableName: 'instances', Key: { id: { S: 'a' } } }));
      await fetch(`${endpoint}/v2/droplets/7?token=secret-query`);
    });

    await handler({}, context);
    await handler({}, context);
    const docs = await arrived(6);

    const handlers = docs.filter((d) => d.name === '## index.handler');
    const calls = docs.filter((d) => d.namespace === 'aws');
    const remote = docs.filter((d) => d.namespace === 'remote');
    expect([handlers.length, calls.length, remote.length]).toEqual([2, 2, 2]);
    expect(handlers.map((d) => [d.type, d.trace_id, d.parent_id, d.annotations])).toEqual([
      ['subsegment', ROOT, LAMBDA_PARENT, { ColdStart: true, Service: 'svc' }],
      ['subsegment', ROOT, LAMBDA_PARENT, { ColdStart: false, Service: 'svc' }],
    ]);
    const [first] = handlers as { id: string; start_time: number; end_time: number }[];
    expect(first!.end_time).toBeGreaterThanOrEqual(first!.start_time);
    expect(calls[0]).toMatchObject({
      name: 'DynamoDB',
      parent_id: first!.id,
      trace_id: ROOT,
      aws: { operation: 'GetItem', table_name: 'instances', region: 'us-east-1', request_id: 'req-1', retries: 0 },
      http: { response: { status: 200 } },
    });
    expect(remote[0]).toMatchObject({
      name: '127.0.0.1',
      parent_id: first!.id,
      http: { request: { method: 'GET', url: `${endpoint}/v2/droplets/7` }, response: { status: 503 } },
      fault: true,
    });
    // Each callee got the trace header naming its own subsegment as the parent.
    expect(received.map((h) => h['x-amzn-trace-id'])).toEqual([
      `Root=${ROOT};Parent=${String(calls[0]!.id)};Sampled=1`,
      `Root=${ROOT};Parent=${String(remote[0]!.id)};Sampled=1`,
      `Root=${ROOT};Parent=${String(calls[1]!.id)};Sampled=1`,
      `Root=${ROOT};Parent=${String(remote[1]!.id)};Sampled=1`,
    ]);
    // Neither the response of the call nor the handler's is recorded, nor a query string.
    const sent = JSON.stringify(docs);
    expect(sent).not.toContain('hunter2');
    expect(sent).not.toContain('secret-query');
  });

  it('records a failed handler as a fault with its error redacted', async () => {
    const tracer = new Tracer({ serviceName: 'svc', redact: (text) => text.replace(/svcmcp_\w+/g, '[REDACTED]') });
    const handler = tracedHandler(tracer, () => Promise.reject(new TypeError('bad key svcmcp_abc123')));

    await expect(handler({}, context)).rejects.toThrow(TypeError);
    const [doc] = await arrived(1);

    expect(doc).toMatchObject({
      name: '## index.handler',
      fault: true,
      cause: { exceptions: [{ type: 'TypeError', message: 'bad key [REDACTED]' }] },
    });
  });

  it('sends nothing when switched off, outside Lambda, or for an unsampled request', async () => {
    const tracer = new Tracer({ serviceName: 'svc' });
    const handler = tracedHandler(tracer, async () => undefined);
    for (const change of [
      { POWERTOOLS_TRACE_ENABLED: 'false' },
      { AWS_EXECUTION_ENV: '' },
      { _X_AMZN_TRACE_ID: `Root=${ROOT};Parent=${LAMBDA_PARENT};Sampled=0` },
    ]) {
      const before = { ...process.env };
      Object.assign(process.env, change);
      await handler({}, context);
      process.env = before;
    }
    await handler({}, context);

    expect(await arrived(1)).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(documents).toHaveLength(1);
  });

  it('reads the trace header and the daemon address in the forms Lambda sets them', () => {
    expect(parseTraceHeader(`Root=${ROOT};Parent=${LAMBDA_PARENT};Sampled=1;Lineage=a:1`)).toEqual({
      root: ROOT,
      parent: LAMBDA_PARENT,
      sampled: true,
    });
    expect(parseTraceHeader('Parent=x')).toBeUndefined();
    expect(daemonAddress('169.254.79.129:2000')).toEqual({ host: '169.254.79.129', port: 2000 });
    expect(daemonAddress('tcp:127.0.0.1:2000 udp:127.0.0.2:2001')).toEqual({ host: '127.0.0.2', port: 2001 });
    expect(daemonAddress(undefined)).toEqual({ host: '127.0.0.1', port: 2000 });
  });
});
