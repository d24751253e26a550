import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
import { errorBodySchema, rateLimitErrorSchema } from './errors';
import {
  actionBodySchema,
  actionResultSchema,
  createInstanceBodySchema,
  deleteResultSchema,
  instanceDetailSchema,
  instanceSummarySchema,
  listInstancesQuerySchema,
  planSchema,
  sshKeySchema,
} from './instances';
import { jobViewSchema } from './jobs';
import { consolePaths } from './openapi-console';
import { apiKeyInfoSchema, createdApiKeySchema, createKeyBodySchema, revokedKeySchema } from './keys';
import { webhookOpenApi } from './webhooks-openapi';

/**
 * The machine-readable interface, generated from the same zod schemas that validate requests and shape
 * responses, so the document cannot drift from the code.
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
const bearer = [{ [bearerAuth.name]: [] }];
const session = [{ [sessionCookie.name]: [] }];
/** Both schemes in one requirement object: the cookie and the header together. */
const sessionWithCsrf = [{ [sessionCookie.name]: [], [csrfToken.name]: [] }];

/** Named components: the generator emits each once and refers to it. */
const Plan = planSchema.meta({ id: 'Plan' });
const SshKey = sshKeySchema.meta({ id: 'SshKey' });
const InstanceDetail = instanceDetailSchema.extend({ plan: Plan, ssh_key: SshKey }).meta({ id: 'InstanceDetail' });
const InstanceSummary = instanceSummarySchema.extend({ plan: Plan }).meta({ id: 'InstanceSummary' });
const ErrorBody = errorBodySchema.meta({ id: 'Error' });
const RateLimitError = rateLimitErrorSchema.meta({ id: 'RateLimitError' });
const ApiKeyInfo = apiKeyInfoSchema.meta({ id: 'ApiKeyInfo' });
const CreatedApiKey = createdApiKeySchema.meta({ id: 'CreatedApiKey' });
const Job = jobViewSchema.meta({ id: 'Job' });
const ActionResult = actionResultSchema.meta({ id: 'ActionResult' });
const DeleteResult = deleteResultSchema.meta({ id: 'DeleteResult' });

const header = (description: string, required: boolean, schema: { type: 'string' | 'integer'; minimum?: number } = { type: 'string' }) => ({
  description,
  required,
  schema,
});
const requestIdHeader = { 'X-Request-Id': header('Identifies the request in our logs.', true) };
/** On every answer to an authenticated instance request; absent when the key itself was refused. */
const rateLimitHeaders = (required: boolean) => ({
  ...requestIdHeader,
  RateLimit: header('What remains of each limit window: `"general";r=<remaining>;t=<seconds to reset>`.', required),
  'RateLimit-Policy': header(
    'The limits that apply: `"general";q=60;w=60`, plus `"deploy";q=5;w=3600` on create; on a 429 for too many failed authentications from one address, `"failed-auth";q=20;w=60`.',
    required,
  ),
});

/** 429: an account over one of its limits, or a source address over its failed authentications. */
const rateLimited = (description: string, headers: Headers) => ({
  description,
  headers: { ...headers, 'Retry-After': header('Seconds to wait before retrying.', true, { type: 'integer', minimum: 1 }) },
  content: json(RateLimitError),
});

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });

type Headers = Record<string, ReturnType<typeof header>>;

function error(description: string, headers: Headers = requestIdHeader) {
  return { description, headers, content: json(ErrorBody) };
}

/** The error responses an instance route can give, by status. */
function instanceErrors(statuses: number[]) {
  const texts: Record<number, string> = {
    400: 'Invalid request (the text says which field and why).',
    401: 'Missing or malformed Authorization header; Invalid API key prefix; Invalid or revoked API key; API key owner not found.',
    402: 'Insufficient balance.',
    403: 'Account suspended; Account not confirmed; Instance is billing-paused.',
    404: 'Instance not found (missing, or owned by someone else).',
    409: 'lifecycle conflict (with the current `status`), or an Idempotency-Key whose first request is still in progress.',
    413: 'Request body too large (limit 16 KiB).',
    422: 'The Idempotency-Key was already used with a different request.',
    502: 'Upstream error.',
    503: 'Capacity exhausted (IPv4 pool or tier).',
  };
  return Object.fromEntries([
    ...statuses.map((status) => [status, error(texts[status] ?? 'Error.', rateLimitHeaders(false))]),
    [
      429,
      rateLimited(
        'Rate limit exceeded: the account is over one of its limits, or the source address failed authentication too often.',
        rateLimitHeaders(true),
      ),
    ],
    [500, error('Internal server error (no details).')],
  ]);
}

const instancePath = z.object({ instance_id: z.number().int().meta({ description: 'The instance id.' }) });
const idempotencyHeader = z.object({
  'Idempotency-Key': z.string().max(255).optional().meta({
    description: 'Makes a retry safe: the same key and request within 24 hours replays the first response.',
  }),
});
const replayedHeader = { 'Idempotent-Replayed': header('`true` when this is the replay of an earlier response.', false) };

const instanceRoutes: RouteConfig[] = [
  {
    method: 'post',
    path: '/api/v1/instances',
    operationId: 'createInstance',
    summary: 'Deploy an Ubuntu 24.04 server; poll its detail until active or failed',
    description:
      'Accepts the deploy at once with status `pending` and the connection credentials (the root password, and the generated key pair unless `ssh_public_key` is given). Needs a balance above $3.00 and counts against the deploy limit (5 an hour) as well as the general one. Send an `Idempotency-Key` so that a retry never deploys twice.',
    tags: ['instances'],
    security: bearer,
    request: { headers: idempotencyHeader, body: { required: true, content: json(createInstanceBodySchema) } },
    responses: {
      202: {
        description: 'Accepted; status pending, with connection credentials.',
        headers: { ...rateLimitHeaders(true), ...replayedHeader },
        content: json(InstanceDetail),
      },
      ...instanceErrors([400, 401, 402, 403, 409, 413, 422, 503]),
    },
  },
  {
    method: 'get',
    path: '/api/v1/instances',
    operationId: 'listInstances',
    summary: "The caller's instances, in summary form",
    description:
      'The caller\'s live instances by id, in summary form: no `ssh_key` and no `activated_at`. Without parameters the list holds every live instance. A response is at most 6 MB (about 12,000 summaries) and opens every listed instance\'s credentials, so beyond 1,000 live instances a client must page: `per_page` (1–200), then follow the `Link: <…>; rel="next"` header until a page comes without one. Deleted instances cost a list nothing.',
    tags: ['instances'],
    security: bearer,
    request: { query: listInstancesQuerySchema },
    responses: {
      200: {
        description: 'The instances (one page of them when paging).',
        headers: {
          ...rateLimitHeaders(true),
          Link: header('When paging and more instances may follow: `</api/v1/instances?per_page=N&page_token=T>; rel="next"`.', false),
        },
        content: json(z.array(InstanceSummary)),
      },
      ...instanceErrors([400, 401, 403]),
    },
  },
  {
    method: 'get',
    path: '/api/v1/instances/{instance_id}',
    operationId: 'getInstance',
    summary: 'One instance, with its live power state, SSH credentials and plan',
    description:
      "The detail form, with the power state read from the upstream server when it answers in time. Another account's instance is 404, like a missing one.",
    tags: ['instances'],
    security: bearer,
    request: { params: instancePath },
    responses: {
      200: { description: 'The instance.', headers: rateLimitHeaders(true), content: json(InstanceDetail) },
      ...instanceErrors([401, 403, 404]),
    },
  },
  {
    method: 'delete',
    path: '/api/v1/instances/{instance_id}',
    operationId: 'deleteInstance',
    summary: 'Delete an instance: gone from the API at once, destroyed upstream asynchronously',
    description:
      'Removes the instance from the API at once (later reads are 404), releases its IPv4 address and destroys the upstream server asynchronously; follow `job_id` for progress.',
    tags: ['instances'],
    security: bearer,
    request: { params: instancePath },
    responses: {
      200: { description: 'Deletion started.', headers: rateLimitHeaders(true), content: json(DeleteResult) },
      ...instanceErrors([401, 403, 404]),
    },
  },
  {
    method: 'post',
    path: '/api/v1/instances/{instance_id}/actions',
    operationId: 'instanceAction',
    summary: 'power_on, power_off, reboot or resize',
    description:
      'Starts `power_on`, `power_off`, `reboot` or `resize` (with `flavor`; the disk can only grow). One action runs at a time per instance; follow `job_id` until it ends. Send an `Idempotency-Key` so that a retry never acts twice.',
    tags: ['instances'],
    security: bearer,
    request: { params: instancePath, headers: idempotencyHeader, body: { required: true, content: json(actionBodySchema) } },
    responses: {
      200: {
        description: 'Accepted; follow job_id.',
        headers: { ...rateLimitHeaders(true), ...replayedHeader },
        content: json(ActionResult),
      },
      ...instanceErrors([400, 401, 402, 403, 404, 409, 413, 422, 502, 503]),
    },
  },
  {
    method: 'get',
    path: '/api/v1/jobs/{job_id}',
    operationId: 'getJob',
    summary: 'Progress of a provision, action or delete (the caller’s own jobs only)',
    description:
      "The status of a provision, action or delete: `running` until it ends `succeeded` or `failed` (with `error`). Only the caller's own jobs; anything else is 404.",
    tags: ['jobs'],
    security: bearer,
    request: { params: z.object({ job_id: z.string().meta({ description: 'The job id, as returned by create, an action or delete.' }) }) },
    responses: {
      200: { description: 'The job.', headers: rateLimitHeaders(true), content: json(Job) },
      ...instanceErrors([401, 403, 404]),
    },
  },
];

const keyErrors = {
  400: error('Invalid request.'),
  401: error('No valid session (a Bearer key is never accepted here).'),
  403: error('CSRF validation failed; Account suspended; Account not confirmed.'),
  429: rateLimited('Rate limit exceeded: the source address failed authentication too often.', {
    ...requestIdHeader,
    RateLimit: header('`"failed-auth";r=0;t=<seconds to reset>`.', true),
    'RateLimit-Policy': header('`"failed-auth";q=20;w=60`.', true),
  }),
  500: error('Internal server error (no details).'),
};

const keyRoutes: RouteConfig[] = [
  {
    method: 'get',
    path: '/api/v1/keys',
    operationId: 'listKeys',
    summary: "The caller's API keys, revoked ones included; never the full key",
    description:
      'Every API key of the signed-in account, revoked ones included, identified by `key_prefix`; the full key is never returned again.',
    tags: ['keys'],
    security: session,
    responses: {
      200: { description: 'The keys.', headers: requestIdHeader, content: json(z.array(ApiKeyInfo)) },
      401: keyErrors[401],
      403: keyErrors[403],
      429: keyErrors[429],
      500: keyErrors[500],
    },
  },
  {
    method: 'post',
    path: '/api/v1/keys',
    operationId: 'createKey',
    summary: 'Create a key; the full key is returned only here',
    description:
      'Creates an API key and returns it in full in `full_key`, this once. Needs a confirmed account that has deposited $1.00 or more at some time.',
    tags: ['keys'],
    security: sessionWithCsrf,
    request: { body: { required: false, content: json(createKeyBodySchema.unwrap()) } },
    responses: {
      201: { description: 'Created.', headers: requestIdHeader, content: json(CreatedApiKey) },
      ...keyErrors,
      402: error('Deposit required.'),
      413: error('Request body too large (limit 16 KiB).'),
    },
  },
  {
    method: 'delete',
    path: '/api/v1/keys/{key_id}',
    operationId: 'revokeKey',
    summary: 'Revoke a key, at once and for good',
    description: 'Revokes the key at once and for good: the very next request with it is 401.',
    tags: ['keys'],
    security: sessionWithCsrf,
    request: { params: z.object({ key_id: z.number().int().meta({ description: 'The key id.' }) }) },
    responses: {
      200: { description: 'Revoked.', headers: requestIdHeader, content: json(revokedKeySchema) },
      401: keyErrors[401],
      403: keyErrors[403],
      404: error('Key not found.'),
      429: keyErrors[429],
      500: keyErrors[500],
    },
  },
  {
    method: 'get',
    path: '/api/v1/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This document',
    description: 'This OpenAPI 3.1.0 document, generated from the schemas that validate requests. Public.',
    tags: ['meta'],
    security: [],
    responses: { 200: { description: 'The OpenAPI 3.1.0 document.', content: json(z.record(z.string(), z.unknown())) } },
  },
];

const webhooks = webhookOpenApi({
  security: [{ [bearerAuth.name]: [] }],
  json,
  headers: rateLimitHeaders(true),
  errors: (texts) => ({
    ...instanceErrors([401, 403]),
    ...Object.fromEntries(Object.entries(texts).map(([status, text]) => [status, error(text, rateLimitHeaders(false))])),
  }),
});
const consoleOperations = consolePaths({
  sessionCookie: sessionCookie.name,
  csrfToken: csrfToken.name,
  requestIdHeader,
  error,
  rateLimitError: RateLimitError,
  failedAuthenticationLimited: keyErrors[429],
});
for (const route of [...instanceRoutes, ...keyRoutes, ...webhooks.paths, ...consoleOperations]) registry.registerPath(route);
registry.registerWebhook(webhooks.delivery);

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
      { name: 'console', description: 'Self-service sign-up, sign-in and password reset, and the signed-in account (browser session).' },
      { name: 'meta', description: 'This document.' },
    ],
  });
  return document;
}
