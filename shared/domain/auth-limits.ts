import type { Deps } from './deps';
import { giveBackSlidingWindow, hitSlidingWindow, markHolds, setMark, type SlidingWindowHit } from '../store/counters';
import { rateLimitExceeded } from '../model/errors';
import { sha256Hex } from '../model/crypto';
import { entryTimeMs } from '../model/rate-limits';

/**
 * Brute-force limits on the console's sign-in routes, in sliding windows on the counters table: every request per
 * source address; failed sign-ins per e-mail address and source address together; e-mails per address and source
 * together, within a larger daily allowance per address. Limits that an address's owner shares with everyone else
 * are kept generous, so that nobody else can use them up to lock the owner out, and the owner's known sources
 * (those the address has signed in from) keep an allowance of their own past them. Counting happens whether or not
 * the address is registered, so a refusal tells nothing about it.
 */
const WINDOW_MS = 15 * 60_000;
const DAY_MS = 24 * 3_600_000;
/** A source stays known this long after the address last signed in from it. */
const KNOWN_SOURCE_DAYS = 90;

async function hit(deps: Deps, counter: string, limit: number, windowMs: number, now: Date): Promise<SlidingWindowHit> {
  return hitSlidingWindow(deps, `auth#${counter}`, limit, windowMs, now.getTime());
}

/** The refusal of a full window: free again when its limit-th newest entry leaves it. */
function refusal(hit: SlidingWindowHit, limit: number, windowMs: number, now: Date) {
  const freedAtMs = entryTimeMs(hit.newestFirst[limit - 1] ?? hit.entry) + windowMs;
  return rateLimitExceeded(Math.max(1, Math.ceil((freedAtMs - now.getTime()) / 1000)));
}

const giveBack = (deps: Deps, counter: string, hit: SlidingWindowHit) => () => giveBackSlidingWindow(deps, `auth#${counter}`, hit.entry);

async function take(deps: Deps, counter: string, limit: number, windowMs: number, now: Date): Promise<() => Promise<void>> {
  const taken = await hit(deps, counter, limit, windowMs, now);
  if (!taken.allowed) throw refusal(taken, limit, windowMs, now);
  return giveBack(deps, counter, taken);
}

const knownSourceMark = (email: string, sourceAddress: string) => `auth#known#${sha256Hex(email)}#${sourceAddress}`;

/** The address has signed in from this source: for a while, its limits treat the source as its owner's. */
export async function rememberSourceOf(deps: Deps, email: string, sourceAddress: string, now = deps.clock.now()): Promise<void> {
  await setMark(deps, knownSourceMark(email, sourceAddress), Math.ceil(now.getTime() / 1000) + KNOWN_SOURCE_DAYS * 86_400);
}

const isKnownSource = (deps: Deps, email: string, sourceAddress: string, now: Date) =>
  markHolds(deps, knownSourceMark(email, sourceAddress), now.getTime());

/** One request of any console auth route from this source address. */
export async function limitSourceAddress(deps: Deps, address: string, now = deps.clock.now()): Promise<void> {
  await take(deps, `addr#${address}`, deps.config.console.limits.perAddress, WINDOW_MS, now);
}

/**
 * One message to this address (sign-up, reset) asked for from this source address, and one of the address's
 * allowance for the day. Once strangers have used that up, the owner's known sources take from an allowance only
 * they share: someone else can use up their own share, never the owner's. The source is looked up only then.
 */
export async function limitMailsTo(deps: Deps, email: string, sourceAddress: string, now = deps.clock.now()): Promise<void> {
  const { mailsPerEmailAndSource, mailsPerEmailPerDay, mailsPerEmailPerDayToKnownSources } = deps.config.console.limits;
  const address = sha256Hex(email);
  await take(deps, `mail#${address}#${sourceAddress}`, mailsPerEmailAndSource, WINDOW_MS, now);
  const day = await hit(deps, `mail-day#${address}`, mailsPerEmailPerDay, DAY_MS, now);
  if (day.allowed) return;
  if (!(await isKnownSource(deps, email, sourceAddress, now))) throw refusal(day, mailsPerEmailPerDay, DAY_MS, now);
  await take(deps, `mail-day-known#${address}`, mailsPerEmailPerDayToKnownSources, DAY_MS, now);
}

/**
 * Reserves a failed sign-in for this address, from this source address, under the password's current generation,
 * before the password is checked, so parallel guesses cannot slip past the limit; a correct password gives the
 * reservation back. Guesses from elsewhere never lock the owner out, and a password reset starts a new generation,
 * so it lifts every lock on the address. Past the source's own share, the address's failures from all sources
 * together have a ceiling too, which slows a guesser with many source addresses; the owner's known sources are let
 * past it (they keep only their own share), and a source is looked up only then.
 */
export async function reserveFailedSignIn(
  deps: Deps,
  email: string,
  passwordVersion: number,
  sourceAddress: string,
  now = deps.clock.now(),
): Promise<{ release(): Promise<void> }> {
  const { failedSignInsPerEmailAndSource, failedSignInsPerEmail } = deps.config.console.limits;
  const address = `sign-in#${sha256Hex(email)}#${passwordVersion}`;
  const releaseSource = await take(deps, `${address}#${sourceAddress}`, failedSignInsPerEmailAndSource, WINDOW_MS, now);
  const all = await hit(deps, address, failedSignInsPerEmail, WINDOW_MS, now);
  if (all.allowed) {
    const releaseAll = giveBack(deps, address, all);
    return { release: () => Promise.all([releaseSource(), releaseAll()]).then(() => undefined) };
  }
  if (await isKnownSource(deps, email, sourceAddress, now)) return { release: releaseSource };
  // Refused before the password is checked: not a failure of this source.
  await releaseSource();
  throw refusal(all, failedSignInsPerEmail, WINDOW_MS, now);
}
