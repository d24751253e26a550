import { holdAfterThrottle, latestBucket, takePlan, takeToken, tokensAt, type UpstreamPriority } from '../../shared/model/upstream-budget';

const settings = { capacity: 20, refillPerSecond: 1 };
const headers = (values: Record<string, string>) => new Headers(values);
const NOW = Date.parse('2026-11-23T10:00:00Z');

describe('upstream request budget', () => {
  // A token is earned back every second: a bucket holding n tokens is full again (20 - n) seconds from now.
  it.each<[string, number, UpstreamPriority, boolean, number]>([
    ['a full bucket serves live reads', NOW - 5_000, 'live', true, NOW + 1_000],
    ['live reads leave half the bucket: 11 tokens serve one more', NOW + 9_000, 'live', true, NOW + 10_000],
    ['live reads leave half the bucket: 10.5 tokens do not', NOW + 9_500, 'live', false, NOW + 9_500],
    ['the sweep leaves a fifth: 5 tokens serve one more page', NOW + 15_000, 'sweep', true, NOW + 16_000],
    ['the sweep leaves a fifth: 4.5 tokens do not', NOW + 15_500, 'sweep', false, NOW + 15_500],
    ['workflow steps may take the last token', NOW + 19_000, 'workflow', true, NOW + 20_000],
    ['nothing is sent on less than one token', NOW + 19_100, 'workflow', false, NOW + 19_100],
  ])('%s', (_, tat, priority, granted, after) => {
    const result = takeToken({ tat, holdUntil: 0 }, NOW, priority, settings);

    expect(result).toEqual({ granted, next: { tat: after, holdUntil: 0 } });
  });

  it('takes several tokens at once only when all of them are there for the priority', () => {
    const elevenLeft = { tat: NOW + 9_000, holdUntil: 0 };

    expect(takeToken(elevenLeft, NOW, 'live', settings, 2).granted).toBe(false);
    expect(takeToken(elevenLeft, NOW, 'workflow', settings, 2)).toEqual({ granted: true, next: { tat: NOW + 11_000, holdUntil: 0 } });
  });

  it('starts full, refills at its rate since it was last counted, and never beyond its capacity', () => {
    expect(tokensAt(undefined, NOW, settings)).toBe(20);
    expect(tokensAt({ tat: NOW + 12_500, holdUntil: 0 }, NOW, settings)).toBe(7.5);
    expect(tokensAt({ tat: NOW - 60_000, holdUntil: 0 }, NOW, settings)).toBe(20);
  });

  it.each<[string, number | undefined, boolean, object]>([
    [
      'a bucket never counted is taken as full: set, on condition that it is still not counted or full',
      undefined,
      false,
      { modes: ['start'], startTat: NOW + 1_000 },
    ],
    ['a bucket last seen full the same way', NOW - 1, false, { modes: ['start'], startTat: NOW + 1_000 }],
    [
      'a bucket last seen not full still is: one interval added, on condition that it leaves the reserved half',
      NOW,
      false,
      { modes: ['queue'], addMs: 1_000, latestTat: NOW + 9_000 },
    ],
    [
      'in one round, a bucket last seen full may have been taken from since: set it from now, and add to it, at once',
      NOW - 1,
      true,
      { modes: ['start', 'queue'], startTat: NOW + 1_000, addMs: 1_000, latestTat: NOW + 9_000 },
    ],
    ['in one round, a bucket last seen not full the same as ever', NOW, true, { modes: ['queue'] }],
  ])('plans the writes of a live take: %s', (_, tat, inOneRound, plan) => {
    expect(takePlan(tat === undefined ? undefined : { tat, holdUntil: 0 }, NOW, 'live', settings, 1, inOneRound)).toMatchObject({
      ...plan,
      held: true,
    });
  });

  it('tells the bucket from a round’s answers by the latest of each, as it only ever moves later', () => {
    expect(latestBucket([undefined, undefined])).toBeUndefined();
    expect(latestBucket([{ tat: NOW + 3_000, holdUntil: 0 }, undefined, { tat: NOW + 1_000, holdUntil: NOW + 5_000 }])).toEqual({
      tat: NOW + 3_000,
      holdUntil: NOW + 5_000,
    });
  });

  it('holds the sweep and live reads until a 429 says to try again, but not workflow steps', () => {
    const held = { tat: NOW, holdUntil: NOW + 1_000 };

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
