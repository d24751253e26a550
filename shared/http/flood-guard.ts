import { runtimeSlot } from '../platform';
import type { Deps } from '../domain/deps';
import ipaddr from 'ipaddr.js';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { Failure } from '../model/errors';
import { FAILED_AUTH_POLICY, FAILED_AUTH_WINDOW_SECONDS, policyOf, readSlidingWindow } from '../model/rate-limits';
import { logger } from '../observability';
import { hitSlidingWindow } from '../store/counters';

/**
 * Protection against floods of requests that fail authentication (forged, revoked or mistyped credentials):
 *
 * - a key or session that was not found, or is no longer active, is remembered for NEGATIVE_CACHE_TTL_MS, so the
 *   same forged credential repeated costs no database read in that time (per function container);
 * - failed authentications are counted per source address in a sliding window of FAILED_AUTH_WINDOW_SECONDS;
 *   past the limit (`FAILED_AUTH_LIMIT`, 20 by default) the answer is 429 with Retry-After instead of 401, and the
 *   container remembers the address until then, so further failures cost no database write either.
 *
 * Only failures are limited: a request whose credentials hold is served from any address, so users who share an
 * address with a flood (one NAT) keep working.
 */

/**
 * How long a credential found unknown or inactive is refused without a lookup. Keys are random (190 bits) and read
 * strongly consistently, so no real key is looked up before it exists; should a client ever send a key before the
 * write that creates it has finished, it is refused for at most this long. Positive answers are never cached: a
 * revoked key is refused on its very next request.
 */
export const NEGATIVE_CACHE_TTL_MS = 5_000;
/** Entries each cache holds at most (the oldest go first); 10,000 hashes are under 1 MB. */
export const CACHE_MAX_ENTRIES = 10_000;

/** Keys with an expiry, bounded in number; the oldest inserted go first when full. */
export class ExpiringEntries {
  private readonly entries = new Map<string, number>();

  constructor(private readonly maxEntries = CACHE_MAX_ENTRIES) {}

  /** When the entry expires, if it has not yet. */
  expiresAt(key: string, nowMs: number): number | undefined {
    const expiry = this.entries.get(key);
    if (expiry === undefined) return undefined;
    if (expiry > nowMs) return expiry;
    this.entries.delete(key);
    return undefined;
  }

  has(key: string, nowMs: number): boolean {
    return this.expiresAt(key, nowMs) !== undefined;
  }

  set(key: string, expiresAtMs: number): void {
    this.entries.delete(key);
    this.entries.set(key, expiresAtMs);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }
}

/** Credential hashes (API keys, sessions) that were unknown or inactive when last looked up. */
export const unknownCredentials = runtimeSlot(() => new ExpiringEntries());
/** Source addresses over their failed-authentication limit, until the oldest counted failure leaves the window. */
const blockedAddresses = runtimeSlot(() => new ExpiringEntries());

/**
 * The address a limit is counted for: IPv4 addresses as they are (IPv4-mapped IPv6 too), IPv6 by its /64, which a
 * single subscriber holds whole.
 */
export function addressKey(raw: string): string {
  if (!ipaddr.isValid(raw)) return raw.trim() || 'unknown';
  const address = ipaddr.process(raw);
  if (address.kind() === 'ipv4') return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${parts.join(':')}::/64`;
}

/**
 * The client's address. Behind the edge (CloudFront, with the origin-verify header checked first) the connection
 * comes from CloudFront, and the viewer's own address is in `CloudFront-Viewer-Address` (`ip:port`), which
 * CloudFront sets itself; anywhere else, the connection's source address.
 */
export function sourceAddressOf(deps: Deps, event: APIGatewayProxyEventV2): string {
  const viewer = deps.config.edgeOriginSecret ? event.headers['cloudfront-viewer-address'] : undefined;
  const separator = viewer?.lastIndexOf(':') ?? -1;
  const raw = viewer && separator > 0 ? viewer.slice(0, separator) : event.requestContext.http.sourceIp;
  return addressKey(raw ?? '');
}

const failedAuthCounter = (address: string) => `rate#${FAILED_AUTH_POLICY}#${address}`;

function tooManyFailures(limit: number, retryAfterSeconds: number): Failure {
  return new Failure(
    'rate_limited',
    'Rate limit exceeded',
    { retry_after: retryAfterSeconds },
    {
      'Retry-After': String(retryAfterSeconds),
      'RateLimit-Policy': policyOf(FAILED_AUTH_POLICY, limit, FAILED_AUTH_WINDOW_SECONDS),
      RateLimit: `"${FAILED_AUTH_POLICY}";r=0;t=${retryAfterSeconds}`,
    },
  );
}

/**
 * Called with the error of a request that failed authentication (401): counts the failure for its source address
 * and returns the error to answer, the 401 itself or, past the address's limit, a 429. An address already known to
 * be over its limit gets the 429 without a database call.
 */
export async function limitFailedAuthentication(
  deps: Deps,
  event: APIGatewayProxyEventV2,
  failure: Failure,
  now = deps.clock.now().getTime(),
): Promise<Failure> {
  const limit = Math.max(1, deps.config.failedAuthLimit);
  const address = sourceAddressOf(deps, event);
  const blockedUntil = blockedAddresses.of(deps).expiresAt(address, now);
  if (blockedUntil !== undefined) return tooManyFailures(limit, Math.max(1, Math.ceil((blockedUntil - now) / 1000)));
  const windowMs = FAILED_AUTH_WINDOW_SECONDS * 1000;
  let hit: Awaited<ReturnType<typeof hitSlidingWindow>>;
  try {
    hit = await hitSlidingWindow(deps, failedAuthCounter(address), limit, windowMs, now);
  } catch (error) {
    // Counting is a defence, not a condition of the answer: the request still gets its 401.
    logger.warn('could not count a failed authentication', { error });
    return failure;
  }
  if (hit.allowed) return failure;
  const { resetSeconds } = readSlidingWindow(hit.newestFirst, now, limit, FAILED_AUTH_WINDOW_SECONDS);
  blockedAddresses.of(deps).set(address, now + resetSeconds * 1000);
  return tooManyFailures(limit, resetSeconds);
}
