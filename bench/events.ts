import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/** A payload-v2 event as API Gateway would send it to the route's function. */
export function apiEvent(options: {
  method: string;
  routePath: string;
  path: string;
  headers?: Record<string, string>;
  cookies?: string[];
  pathParameters?: Record<string, string>;
  body?: unknown;
}): APIGatewayProxyEventV2 {
  const now = new Date();
  return {
    version: '2.0',
    routeKey: `${options.method} ${options.routePath}`,
    rawPath: options.path,
    rawQueryString: '',
    headers: { host: 'bench.local', 'content-type': 'application/json', ...options.headers },
    ...(options.cookies ? { cookies: options.cookies } : {}),
    ...(options.pathParameters ? { pathParameters: options.pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'bench',
      domainName: 'bench.local',
      domainPrefix: 'bench',
      http: { method: options.method, path: options.path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
      requestId: randomUUID(),
      routeKey: `${options.method} ${options.routePath}`,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    isBase64Encoded: false,
  };
}
