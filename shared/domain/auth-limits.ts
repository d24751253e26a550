import { giveBackSlidingWindow, hitSlidingWindow } from '../store/counters';
import { config } from '../config';
import { rateLimitExceeded } from './errors';
import { sha256Hex } from './crypto';
import { entryTimeMs } from './rate-limits';

/**
 * Brute-force limits on the console's sign-in routes, in sliding 15-minute windows on the counters table: every
 * request per source address, failed sign-ins per e-mail address, and e-mails sent per address. Counting happens
 * whether or not the address is registered, so a refusal tells nothing about it.
 */
const WINDOW_MS = 15 * 60_000;

async function take(counter: string, limit: number, now: Date): Promise<() => Promise<void>> {
  const name = `auth#${counter}`;
  const hit = await hitSlidingWindow(name, limit, WINDOW_MS, now.getTime());
  if (!hit.allowed) {
    // Free again when the limit-th newest entry leaves the window.
    const freedAtMs = entryTimeMs(hit.newestFirst[limit - 1] ?? hit.entry) + WINDOW_MS;
    throw rateLimitExceeded(Math.max(1, Math.ceil((freedAtMs - now.getTime()) / 1000)));
  }
  return () => giveBackSlidingWindow(name, hit.entry);
}

/** One request of any console auth route from this source address. */
export async function limitSourceAddress(address: string, now = new Date()): Promise<void> {
  await take(`addr#${address}`, config().console.limits.perAddress, now);
}

/** One message to this address (sign-up, reset). */
export async function limitMailsTo(email: string, now = new Date()): Promise<void> {
  await take(`mail#${sha256Hex(email)}`, config().console.limits.mailsPerEmail, now);
}

/**
 * Reserves a failed sign-in for this address before the password is checked, so parallel guesses cannot slip past
 * the limit; a correct password gives the reservation back.
 */
export async function reserveFailedSignIn(email: string, now = new Date()): Promise<{ release(): Promise<void> }> {
  return { release: await take(`sign-in#${sha256Hex(email)}`, config().console.limits.failedSignInsPerEmail, now) };
}
