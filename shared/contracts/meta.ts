import * as z from '../model/zod';
import { DEFAULT_ROUTE, type PublicRoute } from './contract';

export const openApiDocumentRoute = {
  name: 'OpenApiDocument',
  method: 'GET',
  path: '/api/v1/openapi.json',
  entry: 'functions/api/openapi.ts',
  auth: 'none',
  access: {},
  doc: {
    operationId: 'getOpenApiDocument',
    summary: 'This document',
    description: 'This OpenAPI 3.1.0 document, generated from the schemas that validate requests. Public.',
    tags: ['meta'],
    responses: { 200: { description: 'The OpenAPI 3.1.0 document.', schema: z.record(z.string(), z.unknown()) } },
  },
} as const satisfies PublicRoute;

/** The catch-all route: 405 with Allow when the path exists under other methods, 404 otherwise. Not in the document. */
export const notFoundRoute = {
  name: 'NotFound',
  method: 'ANY',
  path: DEFAULT_ROUTE,
  entry: 'functions/api/not-found.ts',
  auth: 'none',
  access: {},
} as const satisfies PublicRoute;
