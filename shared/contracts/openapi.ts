import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import * as z from '../model/zod';
import { UNSUPPORTED_MEDIA_TYPE, type ResponseDoc, type RouteContract, type RouteDoc } from './contract';
import { error, rateLimitHeaders, requestIdHeader } from './docs';
import { webhookDeliveryDoc } from './webhooks';
import { routes } from '../routes';

/**
 * The machine-readable interface, generated from the route contracts: the same zod schemas that validate requests
 * and shape responses, the same auth kinds and limits that choose each route's middlewares, so the document cannot
 * drift from the code.
 */
const registry = new OpenAPIRegistry();

const bearerAuth = registry.registerComponent('securitySchemes', 'bearerAuth', {
  type: 'http',
  scheme: 'bearer',
  description: 'An API key (`svcmcp_…`).',
});
const sessionCookie = registry.registerComponent('securitySchemes', 'sessionCookie', {
  type: 'apiKey',
  in: 'cookie',
  name: 'session',
  description: 'A browser session; POST and DELETE also need its CSRF token.',
});
const csrfToken = registry.registerComponent('securitySchemes', 'csrfToken', {
  type: 'apiKey',
  in: 'header',
  name: 'X-CSRFToken',
  description: "The session's CSRF token, required with the session cookie on POST and DELETE of keys.",
});

/** Both session schemes in one requirement object: the cookie and the header together. */
function securityOf(contract: RouteContract): RouteConfig['security'] {
  switch (contract.auth) {
    case 'bearer':
      if (!contract.console) return [{ [bearerAuth.name]: [] }];
      return [
        { [bearerAuth.name]: [] },
        contract.method === 'GET' ? { [sessionCookie.name]: [] } : { [sessionCookie.name]: [], [csrfToken.name]: [] },
      ];
    case 'session':
      return [contract.csrf ? { [sessionCookie.name]: [], [csrfToken.name]: [] } : { [sessionCookie.name]: [] }];
    case 'account':
      return [{ [bearerAuth.name]: [] }, contract.csrf ? { [sessionCookie.name]: [], [csrfToken.name]: [] } : { [sessionCookie.name]: [] }];
    case 'none':
      return [];
  }
}

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });

const idempotencyHeader = z.object({
  'Idempotency-Key': z.string().max(255).optional().meta({
    description: 'Makes a retry safe: the same key and request within 24 hours replays the first response.',
  }),
});

/** A body that is not JSON: every route that takes one can answer it (see shared/http/middleware/json-body.ts). */
function unsupportedMediaType(contract: RouteContract): ResponseDoc {
  const lenient =
    contract.auth === 'bearer' ? ' (none, or `application/x-www-form-urlencoded` as `curl -d` sends, is read as JSON too)' : '';
  return error(`${UNSUPPORTED_MEDIA_TYPE}${lenient}.`, contract.auth === 'bearer' ? rateLimitHeaders(false) : requestIdHeader);
}

function responseOf({ description, headers, schema }: ResponseDoc): ResponseConfig {
  const response: ResponseConfig = { description };
  if (headers) response.headers = { ...headers };
  if (schema) response.content = json(schema);
  return response;
}

/** A body schema that accepts no body at all is documented as an optional body of the schema it wraps. */
function requestBodyOf(schema: z.ZodType) {
  return schema instanceof z.ZodOptional
    ? { required: false, content: json(schema.unwrap() as z.ZodType) }
    : { required: true, content: json(schema) };
}

const methods = { GET: 'get', POST: 'post', PATCH: 'patch', DELETE: 'delete', ANY: 'get' } as const;

function operationOf(contract: RouteContract, doc: RouteDoc): RouteConfig {
  const responses = contract.body ? { ...doc.responses, 415: unsupportedMediaType(contract) } : doc.responses;
  const idempotent = contract.auth === 'bearer' && contract.idempotent;
  const request = {
    ...(contract.params ? { params: contract.params } : {}),
    ...(contract.query ? { query: contract.query } : {}),
    ...(idempotent ? { headers: idempotencyHeader } : {}),
    ...(contract.body ? { body: requestBodyOf(contract.body) } : {}),
  };
  return {
    method: methods[contract.method],
    path: contract.path,
    operationId: doc.operationId,
    summary: doc.summary,
    description: doc.description,
    tags: [...doc.tags],
    security: securityOf(contract),
    ...(Object.keys(request).length > 0 ? { request } : {}),
    responses: Object.fromEntries(Object.entries(responses).map(([status, response]) => [status, responseOf(response)])),
  };
}

for (const contract of routes) if (contract.doc) registry.registerPath(operationOf(contract, contract.doc));
registry.registerWebhook({
  method: 'post',
  path: webhookDeliveryDoc.name,
  ...webhookDeliveryDoc.doc,
  tags: [...webhookDeliveryDoc.doc.tags],
  request: { body: { required: true, content: json(webhookDeliveryDoc.body) } },
  responses: { 200: responseOf(webhookDeliveryDoc.doc.responses[200]) },
});

let document: ReturnType<OpenApiGeneratorV31['generateDocument']> | undefined;

export function openApiDocument() {
  document ??= new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Virtual Server Provisioning Service',
      version: '1.0.0',
      description:
        'Deploys and manages bare Ubuntu 24.04 servers. Instance endpoints take a Bearer API key; key management takes a browser session and its CSRF token.',
      contact: { name: 'VPS Provisioning Service' },
    },
    // Relative: the API is served from the same host as this document.
    servers: [{ url: '/', description: 'The host that serves this document' }],
    tags: [
      { name: 'instances', description: 'Deploy, read, act on and delete servers (Bearer API key).' },
      { name: 'jobs', description: 'Progress of provisions, actions and deletes (Bearer API key).' },
      { name: 'keys', description: 'API key management (browser session; CSRF token on POST and DELETE).' },
      { name: 'webhooks', description: 'Receiver URLs for signed events, instead of polling (Bearer API key).' },
      {
        name: 'billing',
        description:
          'Balance, burn rate and runway; card top-ups through the payment provider’s checkout (Bearer API key, or the browser session with its CSRF token on POST).',
      },
      { name: 'console', description: 'Self-service sign-up, sign-in and password reset, and the signed-in account (browser session).' },
      { name: 'agents', description: 'The Model Context Protocol server for AI agents, on the same keys and limits (Bearer API key).' },
      { name: 'meta', description: 'This document.' },
    ],
  });
  return document;
}
