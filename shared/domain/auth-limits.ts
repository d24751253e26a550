import { giveBackWindow, hitWindow } from '../store/counters';
import { config } from '../config';
import { rateLimitExceeded } from './errors';
import { sha256Hex } from './crypto';

/**
 * Brute-force limits on the console's sign-in routes, in fixed 15-minute windows on the counters table: every
 * request per source address, failed sign-ins per e-mail address, and e-mails sent per address. Counting happens
 * whether or not the address is registered, so a refusal tells nothing about it.
 */
const WINDOW_SECONDS = 15 * 60;

function windowOf(now: Date) {
  const start = Math.floor(now.getTime() / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
  return { start, end: start + WINDOW_SECONDS, retryAfter: Math.max(1, start + WINDOW_SECONDS - Math.floor(now.getTime() / 1000)) };
}

async function take(counter: string, limit: number, now: Date): Promise<string> {
  const window = windowOf(now);
  const name = `auth#${counter}#${window.start}`;
  const hit = await hitWindow(name, limit, window.end);
  if (!hit.allowed) throw rateLimitExceeded(window.retryAfter);
  return name;
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
  const name = await take(`sign-in#${sha256Hex(email)}`, config().console.limits.failedSignInsPerEmail, now);
  return { release: () => giveBackWindow(name) };
}
