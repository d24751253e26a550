import { Validator } from '@seriousme/openapi-schema-validator';
import { Document, Spectral, type RulesetDefinition } from '@stoplight/spectral-core';
import { Json } from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../shared/contracts/openapi';
import { actionBodySchema, createInstanceBodySchema } from '../../shared/schemas/instances';
import { createdApiKeySchema } from '../../shared/schemas/keys';
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
  labels: { env: 'prod' },
};
const limited = new Headers({ 'x-request-id': 'r', ratelimit: '"general";r=59;t=1', 'ratelimit-policy': '"general";q=60;w=60' });

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1.0, version 1.0.0, with every path of the specification', () => {
    const document = openApiDocument();

    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('1.0.0');
    expect(Object.keys(document.paths ?? {})).toEqual(
      expect.arrayContaining([
        '/api/v1/instances',
        '/api/v1/instances/{instance_id}',
        '/api/v1/instances/{instance_id}/actions',
        '/api/v1/keys',
        '/api/v1/keys/{key_id}',
      ]),
    );
    expect(Object.keys(document.paths?.['/api/v1/instances/{instance_id}/actions']?.post?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '400', '401', '402', '403', '404', '409', '429', '502', '503']),
    );
  });
});

type Json = any;
const document: Json = openApiDocument();
const operations = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item as Record<string, Json>).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })),
);
const orderable = ['s-1vcpu-2gb', 's-2vcpu-2gb', 's-2vcpu-4gb', 's-4vcpu-8gb', 's-8vcpu-16gb', 's-16vcpu-32gb'];

/** Every schema object in the document, with where it is, so that rules can be checked across all of them. */
function* schemaProperties(node: Json, path: string): Generator<{ name: string; path: string; schema: Json }> {
  if (!node || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'properties' && value && typeof value === 'object') {
      for (const [name, schema] of Object.entries(value)) yield { name, path: `${path}.${name}`, schema };
    }
    yield* schemaProperties(value, `${path}.${key}`);
  }
}

describe('the OpenAPI document, checked by independent tools', () => {
  it('is valid OpenAPI 3.1 for @seriousme/openapi-schema-validator', async () => {
    const result = await new Validator().validate(structuredClone(document));

    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("has no error and no warning under Spectral's spectral:oas ruleset", async () => {
    const spectral = new Spectral();
    spectral.setRuleset({ extends: [oas as RulesetDefinition] });

    const results = await spectral.run(new Document(JSON.stringify(document), Json));

    expect(results.map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`)).toEqual([]);
  });
});

describe('the OpenAPI document, precise enough for generated clients', () => {
  it.each([
    ['the create body', '/api/v1/instances', 'post'],
    ['the action body', '/api/v1/instances/{instance_id}/actions', 'post'],
  ])('limits flavor on %s to the six orderable flavors', (_, path, method) => {
    const body = document.paths[path][method].requestBody.content['application/json'].schema;

    expect(body.properties.flavor).toEqual({ $ref: '#/components/schemas/Flavor' });
    expect(document.components.schemas.Flavor.enum).toEqual(orderable);
    expect(Object.keys(document.components.schemas.Flavor['x-plans'])).toEqual(orderable);
    expect(document.components.schemas.Flavor['x-plans']['s-2vcpu-4gb']).toEqual({
      vcpu: 2,
      ram_mb: 4096,
      disk_gb: 40,
      hourly_price: 0.03571,
    });
  });

  it('declares every timestamp as a date-time', () => {
    const timestamps = [...schemaProperties(document, '#')].filter(({ name }) => name.endsWith('_at'));

    expect(timestamps.map(({ name }) => name).sort()).toEqual(
      expect.arrayContaining(['activated_at', 'created_at', 'finished_at', 'last_used_at', 'started_at']),
    );
    for (const { path, schema } of timestamps) expect({ path, format: schema.format }).toEqual({ path, format: 'date-time' });
  });

  it('types Retry-After as an integer on every 429', () => {
    const limited = operations.filter(({ operation }) => operation.responses['429']);

    // Every route but the document: the instance, job, webhook and billing routes (per-account limits), the public
    // console routes (per-address and per-e-mail brute-force limits), the cookie routes and the payment provider's
    // webhook (failed authentications or signatures per address), and the MCP endpoint (failed authentications per
    // address; each tool call counts against its route's limits).
    expect(
      limited
        .map(({ name }) => name)
        .filter((name) => name.includes('/auth/'))
        .sort(),
    ).toEqual([
      'GET /api/v1/auth/session',
      'POST /api/v1/auth/confirm',
      'POST /api/v1/auth/forgot-password',
      'POST /api/v1/auth/reset-password',
      'POST /api/v1/auth/sign-in',
      'POST /api/v1/auth/sign-out',
      'POST /api/v1/auth/sign-up',
    ]);
    expect(limited.length).toBe(31);
    for (const { name, operation } of limited) {
      expect({ name, schema: operation.responses['429'].headers['Retry-After'].schema }).toEqual({
        name,
        schema: { type: 'integer', minimum: 1 },
      });
    }
  });

  it('requires the session cookie and the X-CSRFToken header together on POST and DELETE of keys', () => {
    expect(document.components.securitySchemes.csrfToken).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-CSRFToken' });
    expect(document.components.securitySchemes.sessionCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'session' });
    expect(document.paths['/api/v1/keys'].post.security).toEqual([{ sessionCookie: [], csrfToken: [] }]);
    expect(document.paths['/api/v1/keys/{key_id}'].delete.security).toEqual([{ sessionCookie: [], csrfToken: [] }]);
    expect(document.paths['/api/v1/keys'].get.security).toEqual([{ sessionCookie: [] }]);
  });

  it.each([
    ['key_prefix', 'svcmcp_L3v0M', true],
    ['key_prefix', 'svcmcp_L3v0', false],
    ['key_prefix', 'sk_live_L3v0', false],
    ['full_key', `svcmcp_${'a1B2'.repeat(9)}xy`, true],
    ['full_key', `svcmcp_${'a1B2'.repeat(9)}x`, false],
    ['full_key', `svcmcp_${'a1B2'.repeat(9)}x-`, false],
  ])('gives %s a pattern that %s %s', (field, value, matches) => {
    const { pattern } = document.components.schemas.CreatedApiKey.properties[field];

    expect(new RegExp(pattern).test(value)).toBe(matches);
  });

  it('names a server, and gives every operation tags, a summary and a description', () => {
    expect(document.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    for (const { name, operation } of operations) {
      expect({
        name,
        tags: operation.tags.length > 0,
        summary: Boolean(operation.summary),
        description: Boolean(operation.description),
      }).toEqual({
        name,
        tags: true,
        summary: true,
        description: true,
      });
    }
  });
});

describe('the OpenAPI document and request validation', () => {
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi', components: document.components });
  const documented = (path: string) =>
    ajv.compile(
      JSON.parse(
        JSON.stringify(document.paths[path].post.requestBody.content['application/json'].schema).replaceAll(
          '"#/components/',
          '"openapi#/components/',
        ),
      ),
    );

  it.each([
    { body: { project_name: 'web', flavor: 's-1vcpu-2gb' } },
    { body: { project_name: 'web', flavor: 's-16vcpu-32gb', ssh_public_key: 'ssh-ed25519 AAAA' } },
    { body: { project_name: 'web', flavor: 's-1vcpu-2g' } },
    { body: { project_name: 'web', flavor: 's-1vcpu-1gb' } },
    { body: { project_name: 'web' } },
    { body: { flavor: 's-1vcpu-2gb' } },
    { body: { project_name: 'x'.repeat(65), flavor: 's-1vcpu-2gb' } },
    { body: { project_name: 'web', flavor: 's-1vcpu-2gb', region: 'nyc1' } },
  ])('agree on the create body $body', ({ body }) => {
    expect(documented('/api/v1/instances')(body)).toBe(createInstanceBodySchema.safeParse(body).success);
  });

  it.each([
    { body: { type: 'reboot' }, valid: true },
    { body: { type: 'resize', flavor: 's-2vcpu-4gb' }, valid: true },
    { body: { type: 'resize', flavor: 's-2vcpu-4g' }, valid: false },
    { body: { type: 'hibernate' }, valid: false },
    { body: { type: 'reboot', force: true }, valid: false },
  ])('agree on the action body $body', ({ body, valid }) => {
    expect(documented('/api/v1/instances/{instance_id}/actions')(body)).toBe(valid);
    expect(actionBodySchema.safeParse(body).success).toBe(valid);
  });

  it('describes created keys with the same pattern the service checks', () => {
    const created = {
      id: 1,
      name: 'ci',
      key_prefix: 'svcmcp_L3v0M',
      is_active: true,
      created_at: '2026-01-01T00:00:00.000Z',
      last_used_at: null,
      full_key: 'svcmcp_L3v0M',
    };

    expect(createdApiKeySchema.safeParse(created).success).toBe(false);
    expect(contractViolations('POST', '/api/v1/keys', 201, new Headers({ 'x-request-id': 'r' }), created)).not.toEqual([]);
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
    { why: 'a timestamp is not a date-time', status: 200, headers: limited, body: [{ ...summary, created_at: '1 January 2026' }] },
  ])('flags a response where $why', ({ status, headers, body }) => {
    expect(contractViolations('GET', '/api/v1/instances', status, headers, body)).not.toEqual([]);
  });

  it('leaves paths the document does not describe alone', () => {
    expect(contractViolations('GET', '/nowhere', 404, new Headers(), { error: 'Not found' })).toEqual([]);
  });
});
