import type { Deps } from './deps';
import { giveBackSlidingWindow, hitSlidingWindow } from '../store/counters';
import { rateLimitExceeded } from '../model/errors';
import { sha256Hex } from '../model/crypto';
import { entryTimeMs } from '../model/rate-limits';

/**
 * Brute-force limits on the console's sign-in routes, in sliding windows on the counters table: every request per
 * source address; failed sign-ins per e-mail address and source address together; e-mails per address and source
 * together, within a larger daily allowance per address. Limits that an address's owner shares with everyone else
 * are kept generous, so that nobody else can use them up to lock the owner out. Counting happens whether or not the
 * address is registered, so a refusal tells nothing about it.
 */
const WINDOW_MS = 15 * 60_000;
const DAY_MS = 24 * 3_600_000;

async function take(deps: Deps, counter: string, limit: number, windowMs: number, now: Date): Promise<() => Promise<void>> {
  const name = `auth#${counter}`;
  const hit = await hitSlidingWindow(deps, name, limit, windowMs, now.getTime());
  if (!hit.allowed) {
    // Free again when the limit-th newest entry leaves the window.
    const freedAtMs = entryTimeMs(hit.newestFirst[limit - 1] ?? hit.entry) + windowMs;
    throw rateLimitExceeded(Math.max(1, Math.ceil((freedAtMs - now.getTime()) / 1000)));
  }
  return () => giveBackSlidingWindow(deps, name, hit.entry);
}

/** One request of any console auth route from this source address. */
export async function limitSourceAddress(deps: Deps, address: string, now = deps.clock.now()): Promise<void> {
  await take(deps, `addr#${address}`, deps.config.console.limits.perAddress, WINDOW_MS, now);
}

/**
 * One message to this address (sign-up, reset) asked for from this source address, and one of the address's
 * allowance for the day: someone else can use up their own share, not the owner's.
 */
export async function limitMailsTo(deps: Deps, email: string, sourceAddress: string, now = deps.clock.now()): Promise<void> {
  const { mailsPerEmailAndSource, mailsPerEmailPerDay } = deps.config.console.limits;
  await take(deps, `mail#${sha256Hex(email)}#${sourceAddress}`, mailsPerEmailAndSource, WINDOW_MS, now);
  await take(deps, `mail-day#${sha256Hex(email)}`, mailsPerEmailPerDay, DAY_MS, now);
}

/**
 * Reserves a failed sign-in for this address, from this source address, under the password's current generation,
 * before the password is checked, so parallel guesses cannot slip past the limit; a correct password gives the
 * reservation back. Guesses from elsewhere never lock the owner out, and a password reset starts a new generation,
 * so it lifts every lock on the address.
 */
export async function reserveFailedSignIn(
  deps: Deps,
  email: string,
  passwordVersion: number,
  sourceAddress: string,
  now = deps.clock.now(),
): Promise<{ release(): Promise<void> }> {
  const counter = `sign-in#${sha256Hex(email)}#${passwordVersion}#${sourceAddress}`;
  return { release: await take(deps, counter, deps.config.console.limits.failedSignInsPerEmailAndSource, WINDOW_MS, now) };
}
