import type { Deps } from '../domain/deps';
import { rateLimits, slidingWindowState, type RateLimitName, type WindowState } from '../model/rate-limits';
import { giveBackSlidingWindow, hitSlidingWindow } from '../store/counters';

const windowCounter = (name: RateLimitName, subject: string) => `rate#${name}#${subject}`;

/**
 * Counts the request in each of the route's sliding windows for `subject` (an account; a session's hash for the
 * session window), all at once. A request refused by one window gives back what it took from the narrower ones (the
 * deploy quota), so that a refused create never uses up deploys; the general window keeps it, since every
 * authenticated request counts there.
 */
export async function countRequest(deps: Deps, subject: string, limits: readonly RateLimitName[], nowMs: number): Promise<WindowState[]> {
  const windows = await Promise.all(
    limits.map(async (name) => {
      const { limit, windowSeconds } = rateLimits[name];
      const hit = await hitSlidingWindow(deps, windowCounter(name, subject), limit, windowSeconds * 1000, nowMs);
      return slidingWindowState(name, hit.newestFirst, nowMs, !hit.allowed, hit.allowed ? hit.entry : undefined);
    }),
  );
  if (!windows.some((window) => window.exceeded)) return windows;
  return Promise.all(windows.map((window) => (window.name === 'general' ? window : giveBack(deps, subject, window))));
}

/** Takes the request back out of a window it was counted in; the state then shows the unit back. */
export async function giveBack(deps: Deps, subject: string, window: WindowState): Promise<WindowState> {
  if (window.taken === undefined) return window;
  await giveBackSlidingWindow(deps, windowCounter(window.name, subject), window.taken);
  return { name: window.name, remaining: window.remaining + 1, resetSeconds: window.resetSeconds, exceeded: window.exceeded };
}
