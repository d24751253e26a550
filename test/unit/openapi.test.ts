import { openApiDocument } from '../../shared/schemas/openapi';
import { contractViolations } from '../support/contract';

const summary = {
  instance_id: 1,
  vps_id: '42',
  status: 'active',
  ipv4: '203.0.113.2',
  domain: 'vps-1.vps.example.net',
  custom_domain: null,
  root_user: 'root',
  root_password: 'x',
  ssh_port: 22,
  project_name: 'p',
  plan: { flavor: 's-1vcpu-2gb', vcpu: 1, ram_mb: 2048, disk_gb: 30, hourly_price: 0.01786 },
  created_at: '2026-01-01T00:00:00.000Z',
};
const limited = new Headers({ 'x-request-id': 'r', ratelimit: '"general";r=59;t=1', 'ratelimit-policy': '"general";q=60;w=60' });

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1.0, version 1.0.0, with every path of the specification', () => {
    const document = openApiDocument();

    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('1.0.0');
    expect(Object.keys(document.paths ?? {})).toEqual(
      expect.arrayContaining(['/api/v1/instances', '/api/v1/instances/{instance_id}', '/api/v1/instances/{instance_id}/actions', '/api/v1/keys', '/api/v1/keys/{key_id}']),
    );
    expect(Object.keys(document.paths?.['/api/v1/instances/{instance_id}/actions']?.post?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '400', '401', '402', '403', '404', '409', '429', '502', '503']),
    );
  });
});

describe('contractViolations', () => {
  it('accepts a response that follows the document', () => {
    expect(contractViolations('GET', '/api/v1/instances', 200, limited, [summary])).toEqual([]);
  });

  it.each([
    { why: 'a summary carries ssh_key', status: 200, headers: limited, body: [{ ...summary, ssh_key: {} }] },
    { why: 'a field has the wrong type', status: 200, headers: limited, body: [{ ...summary, ssh_port: '22' }] },
    { why: 'a required header is missing', status: 200, headers: new Headers({ 'x-request-id': 'r' }), body: [summary] },
    { why: 'the status is not documented', status: 418, headers: limited, body: {} },
    { why: 'an error has no error text', status: 404, headers: limited, body: { request_id: 'r' } },
  ])('flags a response where $why', ({ status, headers, body }) => {
    expect(contractViolations('GET', '/api/v1/instances', status, headers, body)).not.toEqual([]);
  });

  it('leaves paths the document does not describe alone', () => {
    expect(contractViolations('GET', '/nowhere', 404, new Headers(), { error: 'Not found' })).toEqual([]);
  });
});
