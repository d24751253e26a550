import type { Deps } from '../domain/deps';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { sha256Hex } from '../model/crypto';
import { Failure, badRequest, rateLimitExceeded } from '../model/errors';
import type { RateLimitName, WindowState } from '../model/rate-limits';
import {
  IDEMPOTENCY_LOCK_SECONDS,
  IDEMPOTENCY_RETENTION_SECONDS,
  claimIdempotencyKey,
  completeIdempotencyKey,
  lapseIdempotencyKey,
  releaseIdempotencyKey,
  type StoredResponse,
} from '../store/idempotency';
import { open } from '../secrets';
import { errorResponse } from './middleware/http-response';
import { countRequest } from './rate-limit-windows';
import type { ApiResponse } from './responses';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

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

/** What the request that held a lapsed claim committed before it died, as it would have answered; undefined if nothing. */
export type ResumeClaim = (deps: Deps, scopedKey: string) => Promise<ApiResponse | undefined>;

/**
 * How a route's answers carry customers' credentials: the answer kept for replay leaves them out, and a replay gets
 * those that still hold, read where they live. So no credential outlives what it opens in a kept answer (a deleted
 * instance's root password is gone with the instance).
 */
export interface ReplayCredentials {
  /** The answer as kept for replay: without its credentials. */
  readonly withheld: (response: ApiResponse) => Promise<ApiResponse>;
  /** A kept answer with the credentials that hold now for the account: none once they are gone. */
  readonly restored: (deps: Deps, response: ApiResponse, accountId: string) => Promise<ApiResponse>;
}

export interface IdempotencyOptions {
  /** Limits counted only once the key is claimed, so that a replay uses none of them. */
  readonly deferredLimits: readonly RateLimitName[];
  readonly onWindows: (states: WindowState[]) => void;
  /** Looks for what an abandoned claim's request committed; without it, a lapsed claim is processed afresh. */
  readonly resume?: ResumeClaim;
  /** Answers carry credentials: kept without them, replayed with those that still hold. */
  readonly credentials?: ReplayCredentials;
}

export type IdempotencyOutcome =
  { readonly kind: 'replay'; readonly response: ApiResponse } | { readonly kind: 'claimed'; readonly key: string };

/**
 * Resolves an Idempotency-Key (scoped to the account): a completed first request is replayed without counting
 * against the deferred limits (the deploy quota), a different request under the same key is 422, one still in
 * flight is 409. A claim whose request died is resumed: what that request committed is answered, not done again.
 * Otherwise the key is claimed and the deferred limits are counted now.
 */
export async function resolveIdempotencyKey(
  deps: Deps,
  event: APIGatewayProxyEventV2,
  accountId: string,
  key: string,
  { deferredLimits, onWindows, resume, credentials }: IdempotencyOptions,
): Promise<IdempotencyOutcome> {
  const scopedKey = `${accountId}#${key}`;
  const requestHash = requestHashOf(event);
  const nowSeconds = Math.floor(deps.clock.now().getTime() / 1000);
  const claim = await claimIdempotencyKey(
    deps,
    scopedKey,
    requestHash,
    nowSeconds,
    IDEMPOTENCY_RETENTION_SECONDS,
    IDEMPOTENCY_LOCK_SECONDS,
  );
  if (!claim.claimed) {
    const { existing } = claim;
    if (existing.request_hash !== requestHash) throw differentRequest();
    if (existing.status === 'in_progress' || !existing.response) {
      throw new Failure('conflict', 'lifecycle conflict', { message: 'A request with this Idempotency-Key is still in progress' });
    }
    const { statusCode, headers, body, sealed } = existing.response;
    const kept = { statusCode, headers, body: sealed ? await open(deps, body, storedResponseContext(scopedKey)) : body };
    return replay(credentials ? await credentials.restored(deps, kept, accountId) : kept);
  }
  const committed = claim.lapsed && resume ? await resume(deps, scopedKey) : undefined;
  if (claim.lapsed && committed) {
    // The key goes back to the request that committed, with its answer, whichever request took the claim over.
    const firstHash = claim.lapsed.request_hash;
    await completeIdempotencyKey(deps, scopedKey, await storedResponseOf(committed, credentials), firstHash);
    if (firstHash !== requestHash) throw differentRequest();
    return replay(committed);
  }
  const windows = await countRequest(deps, accountId, deferredLimits, deps.clock.now().getTime());
  onWindows(windows);
  const exceeded = windows.filter((w) => w.exceeded);
  if (exceeded.length > 0) {
    await releaseIdempotencyKey(deps, scopedKey);
    throw rateLimitExceeded(Math.max(...exceeded.map((w) => w.resetSeconds)));
  }
  return { kind: 'claimed', key: scopedKey };
}

const differentRequest = () => new Failure('unprocessable', 'Idempotency-Key was already used with a different request');

const replay = (response: ApiResponse): IdempotencyOutcome => ({
  kind: 'replay',
  response: { ...response, headers: { ...response.headers, 'Idempotent-Replayed': 'true' } },
});

/** A body kept sealed (before answers were kept without their credentials) opens only for the same account and key. */
const storedResponseContext = (scopedKey: string) => ({ purpose: 'stored-response', idempotency_key: scopedKey });

/** The response as kept for replay: without the per-request headers, and without credentials. */
async function storedResponseOf(response: ApiResponse, credentials: ReplayCredentials | undefined): Promise<StoredResponse> {
  const kept = credentials ? await credentials.withheld(response) : response;
  const headers = Object.fromEntries(
    Object.entries(kept.headers).filter(([name]) => !/^(ratelimit|ratelimit-policy|x-request-id|idempotent-replayed)$/i.test(name)),
  );
  return { statusCode: kept.statusCode, headers, body: String(kept.body ?? '') };
}

/**
 * Keeps what the first request answered for replay: successes and refusals that a retry would meet again (bad
 * input, not found, no funds). Gives the key up for answers that depend on the moment (401, 403, 409, 429, 5xx),
 * so that a retry with the same key is processed afresh. Credentials are left out of what is kept.
 */
export async function settleIdempotencyKey(
  deps: Deps,
  scopedKey: string,
  response: ApiResponse,
  credentials?: ReplayCredentials,
): Promise<void> {
  // Answers about the moment (the key revoked or the account suspended while it ran, a conflict, a limit, a failure)
  // are not the request's: a retry, with another key of the account too, is processed afresh.
  if (response.statusCode >= 500 || [401, 403, 409, 429].includes(response.statusCode)) {
    await releaseIdempotencyKey(deps, scopedKey);
    return;
  }
  await completeIdempotencyKey(deps, scopedKey, await storedResponseOf(response, credentials));
}

/**
 * Settles the key of a request that failed. A refusal of the domain is a known outcome, settled as its answer.
 * Anything else may have come after a commit: the claim lapses at once, so that a retry resumes it. (Work stopped by
 * its spent budget before its commit did nothing; the middleware gives its key and deploy unit back.)
 */
export async function settleIdempotencyKeyOnError(deps: Deps, scopedKey: string, error: unknown, requestId: string): Promise<void> {
  if (error instanceof Failure) return settleIdempotencyKey(deps, scopedKey, errorResponse(error, requestId));
  return lapseIdempotencyKey(deps, scopedKey);
}
