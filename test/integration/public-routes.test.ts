import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

describe('routes without credentials', () => {
  it.each([
    { what: 'an unknown path', method: 'GET', path: '/api/v1/nothing-here', status: 404, error: 'Not found', allow: null },
    {
      what: 'a known path with another method',
      method: 'PUT',
      path: '/api/v1/instances',
      status: 405,
      error: 'Method not allowed',
      allow: 'POST, GET',
    },
  ])('answers $what with $status, its text, and the request id in header and body', async ({ method, path, status, error, allow }) => {
    const response = await runtime.call(method, path);

    expect([response.status, response.body.error, response.headers.get('allow')]).toEqual([status, error, allow]);
    expect(response.headers.get('x-request-id')).toMatch(/^\S+$/);
    expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
  });

  it('serves the OpenAPI document with a request id', async () => {
    const response = await runtime.call('GET', '/api/v1/openapi.json');

    expect([response.status, response.body.openapi]).toEqual([200, '3.1.0']);
    expect(response.headers.get('x-request-id')).toMatch(/^\S+$/);
  });
});
