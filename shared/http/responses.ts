import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export type ApiResponse = APIGatewayProxyStructuredResultV2 & { statusCode: number; headers: Record<string, string> };

/**
 * Every response: responses carry credentials (keys, root passwords, private keys), so no cache may keep one and no
 * browser may sniff one into something else.
 */
const SAFETY_HEADERS = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' } as const;

/**
 * An instance detail whose status is the stored one where the live power state was due (see InstanceReading): the
 * warn-code HTTP caching defined for a stale response (RFC 7234, section 5.5.1), so that a client or an agent never
 * takes it for a live read.
 */
export const STORED_STATE_WARNING = { Warning: '110 - "Response is Stale"' } as const;

export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): ApiResponse {
  return {
    statusCode,
    headers: { 'Content-Type': 'application/json', ...headers, ...SAFETY_HEADERS },
    body: JSON.stringify(body),
  };
}
