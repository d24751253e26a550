import type { FunctionAccess } from './access';
import { webhookRoutes } from './webhook-routes';
import { consoleRoutes } from './console-routes';

/**
 * The HTTP route table, shared by the CDK stack (one Lambda per route behind the HTTP API) and the local
 * gateway, which dispatches the same routes to the same handler modules. It lives with the runtime code because the
 * catch-all route reads it too, to answer 405 with the methods a path does have.
 */
export type HttpMethod = 'GET' | 'POST' | 'DELETE';
export type RouteAuth = 'bearer' | 'session' | 'none';

export interface RouteDefinition {
  /** Logical name; also the CDK construct id and the function name suffix. */
  readonly name: string;
  readonly method: HttpMethod | 'ANY';
  /** API Gateway path template, or `$default` for the catch-all route. */
  readonly path: string;
  /** Handler module, relative to the repository root, exporting `handler`. */
  readonly entry: string;
  readonly auth: RouteAuth;
  readonly access: FunctionAccess;
  /** The function's timeout, sized from its worst case. @default DEFAULT_ROUTE_TIMEOUT_SECONDS */
  readonly timeoutSeconds?: number;
  /** The gateway's own limit for this route, requests per second and burst, when the stage's does not fit it. */
  readonly throttle?: { readonly rateLimit: number; readonly burstLimit: number };
}

export const DEFAULT_ROUTE = '$default';

/**
 * Routes that only touch DynamoDB (and Step Functions) finish in well under a second; 10 s leaves room for the
 * SDK's own throttling retries, a cold start and, on GetInstance, a cold token read plus the 0.8 s live read.
 */
export const DEFAULT_ROUTE_TIMEOUT_SECONDS = 10;

/** A Bearer route that writes conditions each write on its key still being active and its account in standing. */
const requestGuardTables = { apiKeys: ['ConditionCheckItem'], accounts: ['ConditionCheckItem'] } as const;

export const routes: readonly RouteDefinition[] = [
  {
    name: 'CreateInstance',
    method: 'POST',
    path: '/api/v1/instances',
    entry: 'functions/api/create-instance.ts',
    auth: 'bearer',
    access: {
      tables: {
        ...requestGuardTables,
        instances: ['PutItem', 'UpdateItem'],
        jobs: ['PutItem', 'UpdateItem'],
        counters: ['UpdateItem'],
        idempotency: ['PutItem', 'UpdateItem', 'DeleteItem'],
      },
      startsWorkflows: ['provision'],
      // Seals the new credentials; opens a stored response to replay it.
      secrets: ['seal', 'open'],
    },
  },
  {
    name: 'ListInstances',
    method: 'GET',
    path: '/api/v1/instances',
    entry: 'functions/api/list-instances.ts',
    auth: 'bearer',
    access: { tables: { instances: ['Query', 'BatchGetItem'] }, secrets: ['open'] },
  },
  {
    name: 'GetInstance',
    method: 'GET',
    path: '/api/v1/instances/{instance_id}',
    entry: 'functions/api/get-instance.ts',
    auth: 'bearer',
    // Writes only to record a live power change it observed upstream.
    access: { tables: { ...requestGuardTables, instances: ['GetItem', 'UpdateItem'] }, upstream: true, secrets: ['open'] },
    // Polled while a server boots, and each answer may read the live power state from the upstream, whose limit
    // (5,000 requests an hour per token) is shared with the workflows: a fifth of the stage's rate.
    throttle: { rateLimit: 100, burstLimit: 200 },
  },
  {
    name: 'DeleteInstance',
    method: 'DELETE',
    path: '/api/v1/instances/{instance_id}',
    entry: 'functions/api/delete-instance.ts',
    auth: 'bearer',
    access: {
      tables: { ...requestGuardTables, instances: ['GetItem', 'UpdateItem'], jobs: ['PutItem', 'UpdateItem'] },
      startsWorkflows: ['delete'],
    },
  },
  {
    name: 'InstanceAction',
    method: 'POST',
    path: '/api/v1/instances/{instance_id}/actions',
    entry: 'functions/api/instance-action.ts',
    auth: 'bearer',
    access: {
      tables: {
        ...requestGuardTables,
        instances: ['GetItem', 'UpdateItem'],
        jobs: ['GetItem', 'PutItem', 'UpdateItem'],
        counters: ['UpdateItem'],
        idempotency: ['PutItem', 'UpdateItem', 'DeleteItem'],
      },
      startsWorkflows: ['power', 'resize'],
      upstream: true,
    },
    // Worst case about 19.6 s: auth, idempotency and the claim (1 s), a cold token read (1 s), one 4 s read of the
    // server, three 4 s starts with up to 0.6 s of backoff, then the workflow start and settling (1 s). An attempt that would not end
    // 1.5 s before the timeout is not sent, so the claim is always withdrawn or handed to the workflow.
    timeoutSeconds: 20,
  },
  {
    name: 'GetJob',
    method: 'GET',
    path: '/api/v1/jobs/{job_id}',
    entry: 'functions/api/get-job.ts',
    auth: 'bearer',
    access: { tables: { jobs: ['GetItem'] } },
    // Polled until a job ends; one GetItem after auth, so it may take most of the stage's rate on its own.
    throttle: { rateLimit: 300, burstLimit: 600 },
  },
  {
    name: 'ListKeys',
    method: 'GET',
    path: '/api/v1/keys',
    entry: 'functions/api/list-keys.ts',
    auth: 'session',
    access: { tables: { apiKeys: ['Query'] } },
  },
  {
    name: 'CreateKey',
    method: 'POST',
    path: '/api/v1/keys',
    entry: 'functions/api/create-key.ts',
    auth: 'session',
    access: { tables: { apiKeys: ['PutItem'], counters: ['UpdateItem'] } },
  },
  {
    name: 'RevokeKey',
    method: 'DELETE',
    path: '/api/v1/keys/{key_id}',
    entry: 'functions/api/revoke-key.ts',
    auth: 'session',
    access: { tables: { apiKeys: ['Query', 'UpdateItem'] } },
  },
  ...webhookRoutes,
  {
    name: 'OpenApiDocument',
    method: 'GET',
    path: '/api/v1/openapi.json',
    entry: 'functions/api/openapi.ts',
    auth: 'none',
    access: {},
  },
  ...consoleRoutes,
  {
    name: 'NotFound',
    method: 'ANY',
    path: DEFAULT_ROUTE,
    entry: 'functions/api/not-found.ts',
    auth: 'none',
    access: {},
  },
];

/** Tables every route of an auth kind touches before its own work. */
export const authAccess: Record<RouteAuth, FunctionAccess> = {
  // Counters: the rate-limit windows (GetItem only to give a refused create's deploy unit back), and the failed
  // authentications of each source address.
  bearer: { tables: { apiKeys: ['GetItem', 'UpdateItem'], accounts: ['GetItem'], counters: ['GetItem', 'UpdateItem'] } },
  session: { tables: { sessions: ['GetItem'], accounts: ['GetItem'], counters: ['UpdateItem'] } },
  none: {},
};
