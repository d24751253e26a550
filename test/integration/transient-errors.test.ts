import { unitDeps } from '../support/unit-deps';
import type { Deps } from '../../shared/domain/deps';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  InternalServerError,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ResourceNotFoundException,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import { DescribeExecutionCommand, ExecutionDoesNotExist, SFNClient } from '@aws-sdk/client-sfn';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { LOCAL_CREDENTIALS } from '../../shared/aws';
import { ActionOutcomeUnknownError } from '../../shared/domain/action-steps';
import { Failure } from '../../shared/model/errors';
import { ProvisionTimeoutError } from '../../shared/domain/provisioning';
import { CapacityExhaustedError } from '../../shared/model/capacity';
import { rideOutTransient } from '../../shared/store/dynamo-helpers';
import { asStepError, DependencyTransientError, isTransientFailure } from '../../shared/transient-errors';
import {
  UpstreamBudgetSpentError,
  UpstreamDeadlineError,
  UpstreamPermanentError,
  UpstreamTransientError,
} from '../../shared/upstream/driver';
import { workflowStep } from '../../shared/entry-points';
import { provisionInputSchema } from '../../shared/domain/step-inputs';

const metadata = (httpStatusCode?: number) => ({ httpStatusCode, attempts: 3, totalRetryDelay: 412 });

/** What the SDK's Node handler throws for a connection that failed: a Node error with its code, and the SDK's metadata. */
const nodeError = (name: string, message: string, code: string) => Object.assign(new Error(message), { name, code, $metadata: metadata() });

/** An error a service answered that the SDK has no class for (it keeps the service's own name and status). */
const unmodelled = (name: string, httpStatusCode: number, fault: 'client' | 'server') =>
  Object.assign(new Error('m'), { name, $fault: fault, $metadata: metadata(httpStatusCode) });

const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({
    message: 'Transaction cancelled',
    $metadata: metadata(400),
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

const timeout = Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' });

/** Shapes recorded from the SDK (v3, Node handler) against loopback servers, and the name each step ends with. */
const cases: [string, unknown, string][] = [
  // Connections
  [
    'DynamoDB unreachable (ECONNREFUSED)',
    nodeError('Error', 'connect ECONNREFUSED 127.0.0.1:8000', 'ECONNREFUSED'),
    'DependencyTransientError',
  ],
  ['connection reset mid-answer', nodeError('TimeoutError', 'socket hang up', 'ECONNRESET'), 'DependencyTransientError'],
  [
    'connection reset while connecting',
    nodeError('TimeoutError', 'connect ECONNRESET 127.0.0.1:8000', 'ECONNRESET'),
    'DependencyTransientError',
  ],
  ['broken pipe', nodeError('Error', 'write EPIPE', 'EPIPE'), 'DependencyTransientError'],
  [
    'request timeout',
    nodeError('TimeoutError', 'a request has exceeded the configured 1000 ms requestTimeout.', 'ETIMEDOUT'),
    'DependencyTransientError',
  ],
  [
    'DNS lookup failed for now',
    nodeError('Error', 'getaddrinfo EAI_AGAIN dynamodb.us-east-1.amazonaws.com', 'EAI_AGAIN'),
    'DependencyTransientError',
  ],
  ['socket hang up without a code', new Error('socket hang up'), 'DependencyTransientError'],
  [
    'fetch failed on a reset socket',
    new TypeError('fetch failed', { cause: nodeError('Error', 'other side closed', 'UND_ERR_SOCKET') }),
    'DependencyTransientError',
  ],
  [
    'abort by a request timeout',
    Object.assign(new Error('This operation was aborted', { cause: timeout }), { name: 'AbortError' }),
    'DependencyTransientError',
  ],
  // Throttling and 5xx
  ['DynamoDB throttling', new ThrottlingException({ message: 'm', $metadata: metadata(400) }), 'DependencyTransientError'],
  [
    'provisioned throughput exceeded',
    new ProvisionedThroughputExceededException({ message: 'm', $metadata: metadata(400) }),
    'DependencyTransientError',
  ],
  ['account request limit', new RequestLimitExceeded({ message: 'm', $metadata: metadata(400) }), 'DependencyTransientError'],
  ['DynamoDB 500', new InternalServerError({ message: 'm', $metadata: metadata(500) }), 'DependencyTransientError'],
  ['a 503 with no class', unmodelled('ServiceUnavailable', 503, 'server'), 'DependencyTransientError'],
  ['a 502 with no class', unmodelled('BadGateway', 502, 'server'), 'DependencyTransientError'],
  ['a 429 with no class', unmodelled('TooManyRequests', 429, 'client'), 'DependencyTransientError'],
  ['Step Functions throttling', unmodelled('ThrottlingException', 400, 'client'), 'DependencyTransientError'],
  ['Step Functions 500', unmodelled('InternalFailure', 500, 'server'), 'DependencyTransientError'],
  // Contention
  ['transaction conflict', new TransactionConflictException({ message: 'm', $metadata: metadata(400) }), 'DependencyTransientError'],
  ['transaction cancelled by a collision', cancelled('None', 'TransactionConflict'), 'DependencyTransientError'],
  ['transaction cancelled by throttling', cancelled('ThrottlingError', 'None'), 'DependencyTransientError'],
  [
    'meter aggregate of a throttle',
    Object.assign(new AggregateError([nodeError('Error', 'connect ECONNREFUSED', 'ECONNREFUSED')], 'm'), { name: 'Error' }),
    'DependencyTransientError',
  ],
  // Refusals and answers: as they are
  ['failed condition', new ConditionalCheckFailedException({ message: 'm', $metadata: metadata(400) }), 'ConditionalCheckFailedException'],
  ['transaction cancelled by a condition', cancelled('TransactionConflict', 'ConditionalCheckFailed'), 'TransactionCanceledException'],
  ['validation', unmodelled('ValidationException', 400, 'client'), 'ValidationException'],
  ['missing table', new ResourceNotFoundException({ message: 'm', $metadata: metadata(400) }), 'ResourceNotFoundException'],
  ['access denied', unmodelled('AccessDeniedException', 403, 'client'), 'AccessDeniedException'],
  ['no such execution', new ExecutionDoesNotExist({ message: 'm', $metadata: metadata(400) }), 'ExecutionDoesNotExist'],
  ['abort by the caller', Object.assign(new Error('This operation was aborted'), { name: 'AbortError' }), 'AbortError'],
  ['a plain bug', new Error('instance 7 has no credentials to provision with'), 'Error'],
  ['a type error', new TypeError("Cannot read properties of undefined (reading 'id')"), 'TypeError'],
  ['meter aggregate of a bug', Object.assign(new AggregateError([new Error('m')], 'm'), { name: 'Error' }), 'Error'],
  // Typed errors keep their names, whatever they wrap
  ['upstream transient', new UpstreamTransientError('DigitalOcean GET /v2/droplets answered 503', 503), 'UpstreamTransientError'],
  ['upstream call not started for lack of time', new UpstreamDeadlineError('no time'), 'UpstreamTransientError'],
  ['upstream budget spent', new UpstreamBudgetSpentError('budget'), 'UpstreamTransientError'],
  ['upstream refusal', new UpstreamPermanentError('DigitalOcean answered 422', 422), 'UpstreamPermanentError'],
  ['provisioning budget spent', new ProvisionTimeoutError('server not active after 601 s'), 'ProvisionTimeoutError'],
  ['outcome unknown', new ActionOutcomeUnknownError('m'), 'ActionOutcomeUnknownError'],
  ['capacity exhausted', new CapacityExhaustedError('tier'), 'CapacityExhaustedError'],
  ['client failure', new Failure('conflict', 'lifecycle conflict'), 'Failure'],
  [
    'typed error wrapping a connection failure',
    Object.assign(new ProvisionTimeoutError('m'), { cause: nodeError('Error', 'connect ECONNREFUSED', 'ECONNREFUSED') }),
    'ProvisionTimeoutError',
  ],
];

describe('transient failures', () => {
  it.each(cases.map(([label, error, name]) => ({ label, error, name })))('$label: a step ends with $name', ({ error, name }) => {
    const thrown = asStepError(error) as Error;
    expect(thrown.name).toBe(name);
    expect(thrown.message).toBe((error as Error).message);
    if (name === 'DependencyTransientError') expect(thrown.cause).toBe(error);
    else expect(thrown).toBe(error);
  });

  it('counts the upstream transient errors in the class, under their own name', () => {
    const upstream = new UpstreamTransientError('answered 500', 500);
    expect(isTransientFailure(upstream)).toBe(true);
    expect(asStepError(upstream)).toBe(upstream);
  });

  it('maps at the workflow-step boundary, keeping the message', async () => {
    const refused = nodeError('Error', 'connect ECONNREFUSED 127.0.0.1:8000', 'ECONNREFUSED');
    const failing = workflowStep(provisionInputSchema, async (_deps: Deps) => {
      throw refused;
    });
    const failure = await failing({ job_id: 'j', instance_id: 1 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DependencyTransientError);
    expect((failure as Error).name).toBe('DependencyTransientError');
    expect((failure as Error).message).toBe('connect ECONNREFUSED 127.0.0.1:8000');

    const refusal = new UpstreamPermanentError('answered 422', 422);
    const refusing = workflowStep(provisionInputSchema, async (_deps: Deps) => {
      throw refusal;
    });
    await expect(refusing({ job_id: 'j', instance_id: 1 })).rejects.toBe(refusal);
  });
});

describe('transient failures the SDK really throws', () => {
  const servers: (HttpServer | TcpServer)[] = [];
  afterAll(() => servers.forEach((server) => server.close()));

  async function listen(server: HttpServer | TcpServer): Promise<string> {
    servers.push(server);
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
    const address = server.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  /** A service that answers every request with this error. */
  const answering = (status: number, type: string) =>
    listen(
      createHttpServer((request, response) => {
        request.resume();
        response.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-ErrorType': type });
        response.end(JSON.stringify({ __type: type, message: 'm' }));
      }),
    );

  const options = (endpoint: string) => ({
    endpoint,
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ requestTimeout: 300, throwOnRequestTimeout: true }),
  });
  const getItem = (endpoint: string) =>
    new DynamoDBClient(options(endpoint))
      .send(new GetItemCommand({ TableName: 't', Key: { id: { S: 'x' } } }))
      .catch((error: unknown) => error);
  const describeExecution = (endpoint: string) =>
    new SFNClient(options(endpoint))
      .send(new DescribeExecutionCommand({ executionArn: 'arn:aws:states:us-east-1:1:execution:m:e' }))
      .catch((error: unknown) => error);

  it.each([
    // Nothing listens on port 1.
    ['refused', 'DependencyTransientError', async () => getItem('http://127.0.0.1:1')],
    ['reset', 'DependencyTransientError', async () => getItem(await listen(createTcpServer((socket) => socket.resetAndDestroy())))],
    ['hung up', 'DependencyTransientError', async () => describeExecution(await listen(createTcpServer((socket) => socket.destroy())))],
    ['timed out', 'DependencyTransientError', async () => getItem(await listen(createTcpServer(() => undefined)))],
    [
      'throttled',
      'DependencyTransientError',
      async () => getItem(await answering(400, 'com.amazonaws.dynamodb.v20120810#ThrottlingException')),
    ],
    ['500', 'DependencyTransientError', async () => getItem(await answering(500, 'com.amazonaws.dynamodb.v20120810#InternalServerError'))],
    ['503', 'DependencyTransientError', async () => describeExecution(await answering(503, 'ServiceUnavailable'))],
    [
      'no table',
      'ResourceNotFoundException',
      async () => getItem(await answering(400, 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException')),
    ],
    ['no execution', 'ExecutionDoesNotExist', async () => describeExecution(await answering(400, 'ExecutionDoesNotExist'))],
  ])('%s: a step ends with %s', async (_label, name, call) => {
    const error = await call();
    expect((asStepError(error) as Error).name).toBe(name);
  });
});

describe('rideOutTransient', () => {
  it('tries again while DynamoDB fails transiently, and answers once it is back', async () => {
    let calls = 0;
    const answer = await rideOutTransient(unitDeps(), async () => {
      if (++calls < 3) throw nodeError('Error', 'connect ECONNREFUSED 127.0.0.1:8000', 'ECONNREFUSED');
      return 'item';
    });
    expect(answer).toBe('item');
    expect(calls).toBe(3);
  });

  it('gives up after its bounded attempts', async () => {
    let calls = 0;
    const refused = nodeError('Error', 'connect ECONNREFUSED 127.0.0.1:8000', 'ECONNREFUSED');
    await expect(
      rideOutTransient(unitDeps(), async () => {
        calls++;
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(calls).toBe(4);
  });

  it.each([
    ['a failed condition', new ConditionalCheckFailedException({ message: 'm', $metadata: metadata(400) })],
    ['a cancelled transaction, even by a collision', cancelled('TransactionConflict')],
    ['a bug', new Error('m')],
  ])('passes %s on at once', async (_label, error) => {
    let calls = 0;
    await expect(
      rideOutTransient(unitDeps(), async () => {
        calls++;
        throw error;
      }),
    ).rejects.toBe(error);
    expect(calls).toBe(1);
  });
});
