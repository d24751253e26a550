import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { sha256Hex } from '../domain/crypto';
import { Failure, badRequest, rateLimitExceeded } from '../domain/errors';
import type { RateLimitName, WindowState } from '../domain/rate-limits';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey, type StoredResponse } from '../store/idempotency';
import { open, seal } from '../secrets';
import { countRequest } from './rate-limit-windows';
import type { ApiResponse } from './responses';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const RETENTION_SECONDS = 24 * 3600;
/** An in-progress claim older than this belongs to a request that died; a retry may take it over. */
const LOCK_SECONDS = 60;

export function idempotencyKeyOf(event: APIGatewayProxyEventV2): string | undefined {
  const key = event.headers[IDEMPOTENCY_HEADER];
  if (key === undefined) return undefined;
  if (!KEY_PATTERN.test(key)) throw badRequest('Idempotency-Key must be 1 to 255 visible ASCII characters');
  return key;
}

/** What the same key must be sent with again: the same method, path and body. */
function requestHashOf(event: APIGatewayProxyEventV2): string {
  return sha256Hex(`${event.requestContext.http.method} ${event.rawPath}\n${event.body ?? ''}`);
}

export type IdempotencyOutcome =
  { readonly kind: 'replay'; readonly response: ApiResponse } | { readonly kind: 'claimed'; readonly key: string };

/**
 * Resolves an Idempotency-Key (scoped to the account): a completed first request is replayed without counting
 * against the deferred limits (the deploy quota), a different request under the same key is 422, one still in
 * flight is 409; otherwise the key is claimed and the deferred limits are counted now.
 */
export async function resolveIdempotencyKey(
  event: APIGatewayProxyEventV2,
  accountId: string,
  key: string,
  deferredLimits: readonly RateLimitName[],
  onWindows: (states: WindowState[]) => void,
): Promise<IdempotencyOutcome> {
  const scopedKey = `${accountId}#${key}`;
  const requestHash = requestHashOf(event);
  const claim = await claimIdempotencyKey(scopedKey, requestHash, Math.floor(Date.now() / 1000), RETENTION_SECONDS, LOCK_SECONDS);
  if (!claim.claimed) {
    const { existing } = claim;
    if (existing.request_hash !== requestHash) {
      throw new Failure('unprocessable', 'Idempotency-Key was already used with a different request');
    }
    if (existing.status === 'in_progress' || !existing.response) {
      throw new Failure('conflict', 'lifecycle conflict', { message: 'A request with this Idempotency-Key is still in progress' });
    }
    const { statusCode, headers, body, sealed } = existing.response;
    const replayed = sealed ? await open(body, storedResponseContext(scopedKey)) : body;
    return { kind: 'replay', response: { statusCode, headers: { ...headers, 'Idempotent-Replayed': 'true' }, body: replayed } };
  }
  const windows = await countRequest(accountId, deferredLimits, Date.now());
  onWindows(windows);
  const exceeded = windows.filter((w) => w.exceeded);
  if (exceeded.length > 0) {
    await releaseIdempotencyKey(scopedKey);
    throw rateLimitExceeded(Math.max(...exceeded.map((w) => w.resetSeconds)));
  }
  return { kind: 'claimed', key: scopedKey };
}

/** A stored body opens only for the same account and key it was answered to. */
const storedResponseContext = (scopedKey: string) => ({ purpose: 'stored-response', idempotency_key: scopedKey });

/**
 * Keeps what the first request answered for replay: successes and refusals that a retry would meet again (bad
 * input, not found, no funds). Gives the key up for answers that depend on the moment (409 conflicts, 429, 5xx),
 * so that a retry with the same key is processed afresh. A body that carries credentials is stored sealed.
 */
export async function settleIdempotencyKey(scopedKey: string, response: ApiResponse, sealBody: boolean): Promise<void> {
  if (response.statusCode >= 500 || response.statusCode === 429 || response.statusCode === 409) {
    await releaseIdempotencyKey(scopedKey);
    return;
  }
  const headers = Object.fromEntries(
    Object.entries(response.headers).filter(([name]) => !/^(ratelimit|ratelimit-policy|x-request-id)$/i.test(name)),
  );
  const body = String(response.body ?? '');
  const stored: StoredResponse = {
    statusCode: response.statusCode,
    headers,
    body: sealBody ? await seal(body, storedResponseContext(scopedKey)) : body,
    sealed: sealBody,
  };
  await completeIdempotencyKey(scopedKey, stored);
}
