import { chargedPieces, costSince, rateChangeOf, type BilledState, type BillingSegment } from '../../shared/model/billing-segments';
import { catalog } from '../../shared/model/flavors';
import { usdToMicros } from '../../shared/domain/accounts';

const plan = catalog.get('s-1vcpu-2gb')!;
const large = catalog.get('s-16vcpu-32gb')!;
const HOUR = 3_600_000;
const T0 = '2026-11-23T01:00:00.000Z';
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();
const running = (start: string, end: string | null = null): BillingSegment => ({ start, end, hourly_micros: 17_860, quarters: 4 });
const stopped = (start: string, end: string | null = null): BillingSegment => ({ start, end, hourly_micros: 17_860, quarters: 1 });

describe('costSince', () => {
  it.each([
    { state: 'running', segment: running(T0), ms: HOUR, micros: 17_860 },
    { state: 'stopped', segment: stopped(T0), ms: HOUR, micros: 4_465 },
    { state: 'running', segment: running(T0), ms: 5 * 60_000, micros: 1_488 },
    { state: 'stopped', segment: stopped(T0), ms: 5 * 60_000, micros: 372 },
    { state: 'running', segment: running(T0), ms: 0, micros: 0 },
    {
      state: 'running on the largest plan',
      segment: { start: T0, end: null, hourly_micros: 285_710, quarters: 4 as const },
      ms: 24 * HOUR,
      micros: 6_857_040,
    },
    {
      state: 'stopped on the largest plan',
      segment: { start: T0, end: null, hourly_micros: 285_710, quarters: 1 as const },
      ms: 24 * HOUR,
      micros: 1_714_260,
    },
  ])('charges $micros micro-dollars for $ms ms $state', ({ segment, ms, micros }) => {
    expect(costSince(segment, Date.parse(T0) + ms)).toBe(micros);
  });
});

describe('rateChangeOf', () => {
  const billed = (overrides: Partial<BilledState> = {}): BilledState => ({
    plan,
    paused_by: null,
    metered_until: T0,
    deleted_at: null,
    billing_ends_at: null,
    billing_segments: [running(T0)],
    ...overrides,
  });

  it.each([
    {
      change: 'activation opens a running segment at the activation time',
      before: billed({ metered_until: null, billing_segments: [] }),
      after: { metered_until: at(0) },
      now: at(0),
      expected: { closesAt: null, opens: running(at(0)) },
    },
    {
      change: 'a power off closes the running segment and opens a stopped one',
      before: billed(),
      after: { paused_by: 'user' as const },
      now: at(59),
      expected: { closesAt: at(59), opens: stopped(at(59)) },
    },
    {
      change: 'a billing pause bills like a stop',
      before: billed({ billing_segments: [running(at(20))] }),
      after: { paused_by: 'billing' as const },
      now: at(30),
      expected: { closesAt: at(30), opens: stopped(at(30)) },
    },
    {
      change: "a resize opens a segment at the new plan's price",
      before: billed({ paused_by: 'user', billing_segments: [stopped(T0)] }),
      after: { plan: large },
      now: at(7),
      expected: { closesAt: at(7), opens: { start: at(7), end: null, hourly_micros: 285_710, quarters: 1 } },
    },
    {
      change: 'a delete closes the open segment at the deletion and opens none',
      before: billed(),
      after: { deleted_at: at(42) },
      now: at(43),
      expected: { closesAt: at(42), opens: null },
    },
    {
      change: 'a lost server ends billing when it was last seen, never before the open segment',
      before: billed({ billing_segments: [stopped(at(5))] }),
      after: { billing_ends_at: at(3) },
      now: at(20),
      expected: { closesAt: at(5), opens: null },
    },
    {
      change: 'billing that resumes (a lost server found again) opens its segment at that moment, not where it ended',
      before: billed({ billing_ends_at: at(5), metered_until: at(5), billing_segments: [] }),
      after: { billing_ends_at: null },
      now: at(90),
      expected: { closesAt: null, opens: running(at(90)) },
    },
    {
      change: 'an instance billed before segments were kept gets its open segment from metered_until',
      before: billed({ metered_until: at(5), billing_segments: [] }),
      after: { paused_by: 'user' as const },
      now: at(8),
      expected: { closesAt: at(8), opens: stopped(at(8)) },
    },
  ])('$change', ({ before, after, now, expected }) => {
    expect(rateChangeOf(before, { ...before, ...after }, now)).toEqual(expected);
  });

  it.each([
    { change: 'a reboot', after: {} },
    {
      change: 'a stop by billing of an instance stopped by its owner',
      after: {} as Partial<BilledState>,
      paused: 'user' as const,
      next: 'billing' as const,
    },
  ])('leaves the rate alone when $change keeps it', ({ after, paused, next }) => {
    const before = billed({ paused_by: paused ?? null, billing_segments: [paused ? stopped(T0) : running(T0)] });
    expect(rateChangeOf(before, { ...before, ...after, paused_by: next ?? before.paused_by }, at(9))).toBeUndefined();
  });
});

describe('chargedPieces', () => {
  it('charges each segment at its own rate: stopped 00:59:19 to 01:04:45 is a quarter, the rest full', () => {
    const segments = [
      running(at(-10), '2026-11-23T00:59:19.000Z'),
      stopped('2026-11-23T00:59:19.000Z', '2026-11-23T01:04:45.000Z'),
      running('2026-11-23T01:04:45.000Z'),
    ];

    const pieces = chargedPieces(segments, at(-5), Date.parse(at(5)));

    expect(pieces.map((p) => [p.from, p.to, p.quarters, p.amount])).toEqual([
      ['2026-11-23T00:55:00.000Z', '2026-11-23T00:59:19.000Z', 4, 1285],
      ['2026-11-23T00:59:19.000Z', '2026-11-23T01:04:45.000Z', 1, 404],
      ['2026-11-23T01:04:45.000Z', '2026-11-23T01:05:00.000Z', 4, 74],
    ]);
  });

  it("adds up to the whole segment's cost however many runs charge it", () => {
    const segment = running(T0, at(61));
    const cuts = [0, 5, 10, 15, 33, 47, 61].map((m) => Date.parse(at(m)));

    const charged = cuts
      .slice(1)
      .map((cut, i) => chargedPieces([segment], new Date(cuts[i]!).toISOString(), cut).reduce((sum, p) => sum + p.amount, 0));

    expect(charged.reduce((a, b) => a + b, 0)).toBe(18_158);
  });
});

describe('usdToMicros', () => {
  it.each([
    ['50', 50_000_000],
    ['0.01', 10_000],
    ['3.5', 3_500_000],
    ['1234.56', 1_234_560_000],
  ])('reads %s dollars as %i micro-dollars', (usd, micros) => {
    expect(usdToMicros(usd)).toBe(micros);
  });

  it.each(['-1', '1.234', 'abc', '', '1e3'])('refuses %j', (usd) => {
    expect(() => usdToMicros(usd)).toThrow();
  });
});
