import { describe, expect, it } from 'vitest';
import {
  balanceAt,
  billAll,
  burnRateOf,
  reviewAtOf,
  settle,
  statementCut,
  type Burning,
  type BurningSegment,
  type ReviewFacts,
} from '../../shared/model/burn';

const T0 = '2026-11-23T01:00:00.000Z';
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();
const ms = (minutes: number) => Date.parse(at(minutes));
/** s-1vcpu-2gb: $0.01786 an hour. */
const running = (start: string, billedUntil = start): BurningSegment => ({
  start,
  hourly_micros: 17_860,
  quarters: 4,
  billed_until: billedUntil,
});
const stopped = (start: string, billedUntil = start): BurningSegment => ({
  start,
  hourly_micros: 17_860,
  quarters: 1,
  billed_until: billedUntil,
});

const facts = (overrides: Partial<ReviewFacts> = {}): ReviewFacts => ({
  account_id: 'acct_1',
  balance: 17_860,
  burning: { '1': running(T0) },
  billing_paused: false,
  balance_notice: 'below_1h',
  auto_recharge: null,
  payment_method_id: null,
  ...overrides,
});

describe('balanceAt', () => {
  it.each<{ case: string; burning: Burning; minutes: number; expected: number }>([
    { case: 'an hour of one running server', burning: { '1': running(T0) }, minutes: 60, expected: 10_000_000 - 17_860 },
    { case: 'an hour of one stopped server (a quarter)', burning: { '1': stopped(T0) }, minutes: 60, expected: 10_000_000 - 4_465 },
    {
      case: 'two servers for 30 minutes',
      burning: { '1': running(T0), '2': stopped(T0) },
      minutes: 30,
      expected: 10_000_000 - 8_930 - 2_233,
    },
    { case: 'nothing billed', burning: {}, minutes: 600, expected: 10_000_000 },
    { case: 'a segment billed past the moment', burning: { '1': running(T0, at(90)) }, minutes: 60, expected: 10_000_000 },
  ])('is the settled balance less what the open segments cost since they were billed: $case', ({ burning, minutes, expected }) => {
    expect(balanceAt({ balance: 10_000_000, burning }, ms(minutes))).toBe(expected);
  });

  it('moves between two reads a few seconds apart while a server runs', () => {
    const checkpoint = { balance: 10_000_000, burning: { '1': { ...running(T0), hourly_micros: 285_710 } } };

    expect(balanceAt(checkpoint, ms(0) + 5_000)).toBeLessThan(balanceAt(checkpoint, ms(0) + 1_000));
  });
});

describe('burnRateOf', () => {
  it('sums the open segments at their share of the price', () => {
    expect(burnRateOf({ '1': running(T0), '2': stopped(T0) })).toBe(17_860 + 4_465);
  });
});

describe('settle', () => {
  it('books the closed piece from where it was billed and opens the next one billed from its start', () => {
    const settled = settle({ '1': running(T0, at(30)), '2': stopped(T0) }, 1, {
      closesAt: at(60),
      opens: { start: at(60), end: null, hourly_micros: 17_860, quarters: 1 },
    });

    expect(settled.piece).toMatchObject({ instance_id: 1, from: at(30), to: at(60), amount: 8_930, quarters: 4 });
    expect(settled.burning).toEqual({ '1': stopped(at(60)), '2': stopped(T0) });
  });

  it('leaves the account when the instance stops being billed (a delete)', () => {
    const settled = settle({ '7': running(T0) }, 7, { closesAt: at(42), opens: null });

    expect(settled.piece?.amount).toBe(12_502);
    expect(settled.burning).toEqual({});
  });

  it('books nothing for a segment closed where it is billed to already (a lost server last seen before a statement)', () => {
    const settled = settle({ '7': running(T0, at(120)) }, 7, { closesAt: at(60), opens: null });

    expect(settled.piece).toBeNull();
    expect(settled.burning).toEqual({});
  });

  it('opens the first segment without a piece (activation)', () => {
    expect(settle({}, 3, { closesAt: null, opens: { start: at(0), end: null, hourly_micros: 17_860, quarters: 4 } })).toEqual({
      piece: null,
      burning: { '3': running(at(0)) },
    });
  });
});

describe('the daily statement', () => {
  it('cuts at the last midnight UTC when a segment is billed from before it, and not again that day', () => {
    const burning = { '1': running('2026-11-23T22:00:00.000Z') };

    expect(statementCut(burning, Date.parse('2026-11-23T23:59:59.000Z'))).toBeUndefined();
    expect(statementCut(burning, Date.parse('2026-11-24T00:00:30.000Z'))).toBe(Date.parse('2026-11-24T00:00:00.000Z'));
    const billed = billAll(burning, Date.parse('2026-11-24T00:00:00.000Z'));
    expect(statementCut(billed.burning, Date.parse('2026-11-24T23:00:00.000Z'))).toBeUndefined();
  });

  it('keeps what a segment costs the same however it is cut: pieces add up to the whole', () => {
    const segment = { ...running('2026-11-23T21:17:13.000Z'), hourly_micros: 285_710 };
    const endMs = Date.parse('2026-11-26T03:41:07.000Z');
    const whole = balanceAt({ balance: 0, burning: { '1': segment } }, endMs);
    let burning: Record<string, BurningSegment> = { '1': segment };
    let booked = 0;
    for (const midnight of ['2026-11-24', '2026-11-25', '2026-11-26']) {
      const statement = billAll(burning, Date.parse(`${midnight}T00:00:00.000Z`));
      booked -= statement.pieces.reduce((sum, piece) => sum + piece.amount, 0);
      burning = statement.burning;
    }

    expect(balanceAt({ balance: booked, burning }, endMs)).toBe(whole);
    // 54 h 23 min 54 s at $0.28571 an hour.
    expect(whole).toBe(-15_542_148);
  });
});

describe('reviewAtOf', () => {
  it('is the projected exhaustion when the warnings were given: B0 / r after the checkpoint', () => {
    expect(reviewAtOf(facts(), ms(0))).toBe(ms(60));
  });

  it('comes an hour before the exhaustion while the 1-hour warning is still to give', () => {
    expect(reviewAtOf(facts({ balance: 10 * 17_860, balance_notice: 'below_24h' }), ms(0))).toBe(ms(9 * 60));
  });

  it('is in the hour after the next midnight (the statement) when that comes first, spread by account', () => {
    const midnight = Date.parse('2026-11-24T00:00:00.000Z');
    const moments = ['acct_1', 'acct_2', 'acct_3'].map((account_id) => reviewAtOf(facts({ account_id, balance: 1_000_000_000 }), ms(0))!);

    for (const at of moments) expect(at - midnight).toBeGreaterThanOrEqual(0);
    for (const at of moments) expect(at - midnight).toBeLessThan(3_600_000);
    expect(new Set(moments).size).toBe(3);
    expect(reviewAtOf(facts({ account_id: 'acct_2', balance: 1_000_000_000 }), ms(30))).toBe(moments[1]);
  });

  it('is due at once when the balance is spent', () => {
    expect(reviewAtOf(facts({ balance: 0 }), ms(10))).toBe(ms(10));
  });

  it('looks at a paused account only for its statement (stopped servers still cost a quarter)', () => {
    const paused = facts({ balance: -5, billing_paused: true, burning: { '1': stopped(T0) } });
    const statement = reviewAtOf({ ...paused, balance: 1_000_000_000, billing_paused: false }, ms(10));

    expect(reviewAtOf(paused, ms(10))).toBe(statement);
    expect(statement).toBeGreaterThanOrEqual(Date.parse('2026-11-24T00:00:00.000Z'));
  });

  it('is when the balance reaches the auto-recharge threshold', () => {
    const recharge = { enabled: true, threshold_micros: 17_860, amount_micros: 20_000_000, failures: 0, disabled_reason: null };

    expect(reviewAtOf(facts({ balance: 3 * 17_860, auto_recharge: recharge, payment_method_id: 'pm_1' }), ms(0))).toBe(ms(120));
  });

  it('is null when nothing is billed', () => {
    expect(reviewAtOf(facts({ burning: {} }), ms(0))).toBeNull();
  });
});
