import type { Deps } from '../domain/deps';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { constantTimeEqual, sha256Hex } from '../model/crypto';
import { forbidden } from '../model/errors';

/**
 * The header CloudFront adds to every request it forwards to the API (its value is a secret of the stack). CloudFront
 * replaces a viewer's header of the same name with its own value, so only requests that came through the edge, and
 * so through its web application firewall, carry the right one.
 */
export const EDGE_ORIGIN_HEADER = 'x-origin-verify';

/**
 * Refuses a request that did not come through the edge: with the secret configured (the stack behind its edge
 * firewall), a request to the API's own execute-api endpoint lacks the header and gets 403 before anything else
 * runs, so it costs no database call. Without the secret (the local runtime, a stack without an edge) there is no
 * check. The header is taken out of the event either way, so that nothing after this logs or passes it on.
 */
export function assertCameThroughEdge(deps: Deps, event: APIGatewayProxyEventV2): void {
  const presented = event.headers?.[EDGE_ORIGIN_HEADER];
  if (event.headers) delete event.headers[EDGE_ORIGIN_HEADER];
  const secret = deps.config.edgeOriginSecret;
  if (secret === undefined) return;
  // Compared as hashes, so that neither the length nor the value leaks through timing.
  if (presented === undefined || !constantTimeEqual(sha256Hex(presented), sha256Hex(secret))) throw forbidden('Forbidden');
}
