import { holdAfterThrottle, takeToken, tokensAt, type UpstreamPriority } from '../../shared/model/upstream-budget';

const settings = { capacity: 20, refillPerSecond: 1 };
const headers = (values: Record<string, string>) => new Headers(values);
const NOW = Date.parse('2026-11-23T10:00:00Z');

describe('upstream request budget', () => {
  it.each<[string, number, UpstreamPriority, boolean]>([
    ['a full bucket serves live reads', 20, 'live', true],
    ['live reads leave half the bucket: 11 tokens serve one more', 11, 'live', true],
    ['live reads leave half the bucket: 10.5 tokens do not', 10.5, 'live', false],
    ['the sweep leaves a fifth: 5 tokens serve one more page', 5, 'sweep', true],
    ['the sweep leaves a fifth: 4.5 tokens do not', 4.5, 'sweep', false],
    ['workflow steps may take the last token', 1, 'workflow', true],
    ['nothing is sent on less than one token', 0.9, 'workflow', false],
  ])('%s', (_, tokens, priority, granted) => {
    const result = takeToken({ tokens, at: NOW, holdUntil: 0 }, NOW, priority, settings);

    expect(result.granted).toBe(granted);
    expect(result.next.tokens).toBe(granted ? tokens - 1 : tokens);
  });

  it('starts full, refills at its rate since it was last counted, and never beyond its capacity', () => {
    expect(tokensAt(undefined, NOW, settings)).toBe(20);
    expect(tokensAt({ tokens: 0, at: NOW - 7_500, holdUntil: 0 }, NOW, settings)).toBe(7.5);
    expect(tokensAt({ tokens: 15, at: NOW - 60_000, holdUntil: 0 }, NOW, settings)).toBe(20);
  });

  it('holds the sweep and live reads until a 429 says to try again, but not workflow steps', () => {
    const held = { tokens: 20, at: NOW, holdUntil: NOW + 1_000 };

    expect(['workflow', 'sweep', 'live'].map((p) => takeToken(held, NOW, p as UpstreamPriority, settings).granted)).toEqual([
      true,
      false,
      false,
    ]);
    expect(takeToken(held, NOW + 1_000, 'live', settings).granted).toBe(true);
  });

  it.each([
    ['Retry-After in seconds', { 'retry-after': '30' }, NOW + 30_000],
    ['Retry-After as an HTTP date', { 'retry-after': 'Mon, 23 Nov 2026 10:00:20 GMT' }, NOW + 20_000],
    ["DigitalOcean's ratelimit-reset, in epoch seconds", { 'ratelimit-reset': String(NOW / 1000 + 45) }, NOW + 45_000],
    ['no header: one second', {}, NOW + 1_000],
    ['a reset an hour away: capped at a minute', { 'retry-after': '3600' }, NOW + 60_000],
    ['a reset in the past: now', { 'ratelimit-reset': String(NOW / 1000 - 10) }, NOW],
  ])('reads when to try again from %s', (_, values, expected) => {
    expect(holdAfterThrottle(headers(values), NOW)).toBe(expected);
  });
});
