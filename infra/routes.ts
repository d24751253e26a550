import type { FunctionAccess } from './access';
import { consoleRoutes } from './console-routes';

/**
 * The HTTP route table, shared by the CDK stack (one Lambda per route behind the HTTP API) and the local
 * gateway, which dispatches the same routes to the same handler modules.
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
}

export const DEFAULT_ROUTE = '$default';

export const routes: readonly RouteDefinition[] = [
  {
    name: 'CreateInstance',
    method: 'POST',
    path: '/api/v1/instances',
    entry: 'functions/api/create-instance.ts',
    auth: 'bearer',
    access: {
      tables: { instances: 'readwrite', jobs: 'write', counters: 'readwrite', idempotency: 'readwrite' },
      startsWorkflows: ['provision'],
    },
  },
  {
    name: 'ListInstances',
    method: 'GET',
    path: '/api/v1/instances',
    entry: 'functions/api/list-instances.ts',
    auth: 'bearer',
    access: { tables: { instances: 'read' } },
  },
  {
    name: 'GetInstance',
    method: 'GET',
    path: '/api/v1/instances/{instance_id}',
    entry: 'functions/api/get-instance.ts',
    auth: 'bearer',
    // Writes only to record a live power change it observed upstream.
    access: { tables: { instances: 'readwrite' }, upstream: true },
  },
  {
    name: 'DeleteInstance',
    method: 'DELETE',
    path: '/api/v1/instances/{instance_id}',
    entry: 'functions/api/delete-instance.ts',
    auth: 'bearer',
    access: { tables: { instances: 'readwrite', jobs: 'write' }, startsWorkflows: ['delete'] },
  },
  {
    name: 'InstanceAction',
    method: 'POST',
    path: '/api/v1/instances/{instance_id}/actions',
    entry: 'functions/api/instance-action.ts',
    auth: 'bearer',
    access: {
      tables: { instances: 'readwrite', jobs: 'readwrite', counters: 'readwrite', idempotency: 'readwrite' },
      startsWorkflows: ['power', 'resize'],
      upstream: true,
    },
  },
  {
    name: 'GetJob',
    method: 'GET',
    path: '/api/v1/jobs/{job_id}',
    entry: 'functions/api/get-job.ts',
    auth: 'bearer',
    access: { tables: { jobs: 'read' } },
  },
  {
    name: 'ListKeys',
    method: 'GET',
    path: '/api/v1/keys',
    entry: 'functions/api/list-keys.ts',
    auth: 'session',
    access: { tables: { apiKeys: 'read' } },
  },
  {
    name: 'CreateKey',
    method: 'POST',
    path: '/api/v1/keys',
    entry: 'functions/api/create-key.ts',
    auth: 'session',
    access: { tables: { apiKeys: 'write', counters: 'readwrite' } },
  },
  {
    name: 'RevokeKey',
    method: 'DELETE',
    path: '/api/v1/keys/{key_id}',
    entry: 'functions/api/revoke-key.ts',
    auth: 'session',
    access: { tables: { apiKeys: 'readwrite' } },
  },
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
  bearer: { tables: { apiKeys: 'readwrite', accounts: 'read', counters: 'readwrite' } },
  session: { tables: { sessions: 'read', accounts: 'read' } },
  none: {},
};
