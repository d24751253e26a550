import { rateLimits } from '../../shared/model/rate-limits';

/**
 * The numbers the gateway's throttle and the edge firewall's rate rule are computed from, as docs/operations.md states them
 * (Operations on AWS → Throttling). Each limit below is arithmetic on these, so changing a stated number changes the
 * limits with it.
 */

/** The load the service is built for: 100 requests/s over all tenants together. */
const TARGET_REQUESTS_PER_SECOND = 100;
/** The stage takes five times that before the gateway refuses anything: its throttle guards against floods only. */
const STAGE_HEADROOM = 5;
/** The slowest requests the bench measured, at p99: 100–250 ms (3–4 DynamoDB round trips); the upper end. */
const P99_REQUEST_SECONDS = 0.25;
/** A burst the stage absorbs at once: this many seconds at its rate. */
const STAGE_BURST_SECONDS = 2;

/** 100 × 5 = 500 requests/s. */
export const STAGE_RATE_LIMIT = TARGET_REQUESTS_PER_SECOND * STAGE_HEADROOM;
/** 500 × 2 = 1,000 requests. */
export const STAGE_BURST_LIMIT = STAGE_RATE_LIMIT * STAGE_BURST_SECONDS;
/** 500 requests/s × 0.25 s = 125 functions busy at once: an eighth of the account's 1,000. */
export const STAGE_CONCURRENCY = STAGE_RATE_LIMIT * P99_REQUEST_SECONDS;

/**
 * Accounts one source address may carry at their full general limit (an office or a CI fleet behind one NAT). The
 * edge allows an address that many accounts' worth of requests and blocks the rest, so that no single address can
 * take more than a small share of the stage.
 */
const ACCOUNTS_PER_ADDRESS = 10;
/** The firewall's rate-based rule counts each address's requests over this window (WAF allows 60–600 s). */
export const EDGE_WINDOW_SECONDS = 300;
/** 10 accounts × 60 requests a minute × 5 minutes = 3,000 requests per address in any 5 minutes (10 requests/s). */
export const EDGE_REQUESTS_PER_ADDRESS =
  (ACCOUNTS_PER_ADDRESS * rateLimits.general.limit * EDGE_WINDOW_SECONDS) / rateLimits.general.windowSeconds;
/** 500 / 10 = 50 addresses, each at the edge's limit, to fill the stage's throttle: one address takes at most 2 %. */
export const ADDRESSES_TO_FILL_STAGE = STAGE_RATE_LIMIT / (EDGE_REQUESTS_PER_ADDRESS / EDGE_WINDOW_SECONDS);
