import { ConditionalCheckFailedException, DynamoDBServiceException } from '@aws-sdk/client-dynamodb';
import { Failure } from '../../shared/model/errors';
import { errorResponse } from '../../shared/http/middleware/http-response';

const connectionRefused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });
const dynamoError = (name: string, status: number, fault: 'client' | 'server') =>
  new DynamoDBServiceException({ name, $fault: fault, $metadata: { httpStatusCode: status }, message: name });

describe('errorResponse', () => {
  it.each([
    { case: 'DynamoDB unreachable', error: connectionRefused() },
    { case: 'DynamoDB throttling', error: dynamoError('ThrottlingException', 400, 'client') },
    { case: 'DynamoDB answering 500', error: dynamoError('InternalServerError', 500, 'server') },
  ])('answers 503 Service unavailable with Retry-After when $case', ({ error }) => {
    const response = errorResponse(error, 'req-1');

    expect(response.statusCode).toBe(503);
    expect(response.headers).toMatchObject({ 'Retry-After': '2' });
    expect(JSON.parse(response.body!)).toEqual({
      error: 'Service unavailable',
      message:
        'A dependency of the service is briefly unavailable, and the request may or may not have taken effect: retry it after Retry-After (a create or an action with the same Idempotency-Key)',
      request_id: 'req-1',
    });
  });

  it.each([
    { case: 'a bug', error: new TypeError('x is undefined') },
    { case: 'a failed condition the code did not expect', error: new ConditionalCheckFailedException({ message: 'c', $metadata: {} }) },
  ])('answers a bare 500 for $case', ({ error }) => {
    const response = errorResponse(error, 'req-2');

    expect([response.statusCode, JSON.parse(response.body!)]).toEqual([500, { error: 'Internal server error', request_id: 'req-2' }]);
  });

  it('answers a domain failure with its own status and text', () => {
    const response = errorResponse(new Failure('upstream_error', 'Upstream error'), 'req-3');

    expect([response.statusCode, JSON.parse(response.body!).error]).toEqual([502, 'Upstream error']);
  });
});
