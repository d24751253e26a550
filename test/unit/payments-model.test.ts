import {
  creditEntryId,
  creditRefusal,
  nextNotice,
  noticeLevelOf,
  rechargeDue,
  rechargePlan,
  rechargeTopUpId,
  runwayOf,
  topUpAmountSchema,
} from '../../shared/model/payments';
import { understoodEvent } from '../../shared/payments/stripe';
import { autoRechargeBodySchema } from '../../shared/schemas/billing';
import { parseOrBadRequest } from '../../shared/schemas/validation';

const NOW = new Date('2026-11-25T12:00:00.000Z');

describe('creditRefusal', () => {
  const topUp = { account_id: 'acct_a', amount_cents: 2000, provider_session_id: 'cs_1', payment_intent_id: null };
  const paid = { tags: { accountId: 'acct_a', topUpId: 'tu_1' }, amountCents: 2000, sessionId: 'cs_1', paymentIntentId: 'pi_1' };

  it.each([
    { case: 'the top-up it paid', topUp, paid, refusal: undefined },
    { case: 'no top-up of ours', topUp: undefined, paid, refusal: 'unknown_top_up' },
    { case: 'another account', topUp, paid: { ...paid, tags: { accountId: 'acct_b', topUpId: 'tu_1' } }, refusal: 'other_account' },
    { case: 'another amount', topUp, paid: { ...paid, amountCents: 1999 }, refusal: 'other_amount' },
    { case: 'another checkout', topUp, paid: { ...paid, sessionId: 'cs_2' }, refusal: 'other_payment' },
    { case: 'a top-up whose checkout was never recorded', topUp: { ...topUp, provider_session_id: null }, paid, refusal: undefined },
    {
      case: 'another payment for an auto-recharge',
      topUp: { ...topUp, provider_session_id: null, payment_intent_id: 'pi_9' },
      paid: { ...paid, sessionId: undefined },
      refusal: 'other_payment',
    },
  ])('for $case: $refusal', ({ topUp: facts, paid: event, refusal }) => {
    expect(creditRefusal(facts, event)).toBe(refusal);
  });
});

describe('creditEntryId', () => {
  it('keys a checkout by its session and an off-session payment by its payment', () => {
    expect(creditEntryId({ sessionId: 'cs_1', paymentIntentId: 'pi_1' })).toBe('top-up#cs_1');
    expect(creditEntryId({ paymentIntentId: 'pi_1' })).toBe('top-up#pi_1');
  });
});

describe('runwayOf', () => {
  it.each([
    { balance: 24_000_000, burn: 1_000_000, hours: 24, at: '2026-11-26T12:00:00.000Z' },
    { balance: 500_000, burn: 1_000_000, hours: 0.5, at: '2026-11-25T12:30:00.000Z' },
    { balance: -3_000_000, burn: 1_000_000, hours: 0, at: '2026-11-25T12:00:00.000Z' },
    { balance: 5_000_000, burn: 0, hours: null, at: null },
  ])('lasts $hours hours for $balance micro-dollars at $burn an hour', ({ balance, burn, hours, at }) => {
    expect(runwayOf(balance, burn, NOW)).toEqual({ hours, exhaustsAt: at });
  });
});

describe('runway warnings', () => {
  it.each([
    { hours: null, level: 'none' },
    { hours: 24, level: 'none' },
    { hours: 23.9, level: 'below_24h' },
    { hours: 1, level: 'below_24h' },
    { hours: 0.99, level: 'below_1h' },
    { hours: 0, level: 'below_1h' },
  ])('a runway of $hours hours is at $level', ({ hours, level }) => {
    expect(noticeLevelOf({ hours, exhaustsAt: null })).toBe(level);
  });

  it.each([
    { recorded: 'none', now: 'below_24h', record: 'below_24h', warn: true },
    { recorded: 'below_24h', now: 'below_1h', record: 'below_1h', warn: true },
    { recorded: 'none', now: 'below_1h', record: 'below_1h', warn: true },
    { recorded: 'below_24h', now: 'below_24h', record: 'below_24h', warn: false },
    { recorded: 'below_1h', now: 'below_24h', record: 'below_24h', warn: false },
    { recorded: 'below_1h', now: 'none', record: 'none', warn: false },
  ] as const)('from $recorded to $now: records $record, warns $warn', ({ recorded, now, record, warn }) => {
    expect(nextNotice(recorded, now)).toEqual({ record, warn });
  });
});

describe('rechargeDue', () => {
  const on = { enabled: true, threshold_micros: 5_000_000, amount_micros: 20_000_000, failures: 0, disabled_reason: null };

  it.each([
    { case: 'on, a card, at the threshold', settings: on, card: true, balance: 5_000_000, due: true },
    { case: 'on, a card, above the threshold', settings: on, card: true, balance: 5_000_001, due: false },
    { case: 'on, no card', settings: on, card: false, balance: 0, due: false },
    { case: 'off', settings: { ...on, enabled: false }, card: true, balance: 0, due: false },
    { case: 'never set', settings: undefined, card: true, balance: 0, due: false },
  ])('$case: $due', ({ settings, card, balance, due }) => {
    expect(rechargeDue(settings, card, balance)).toBe(due);
  });
});

describe('rechargePlan', () => {
  const on = { enabled: true, threshold_micros: 5_000_000, amount_micros: 20_000_000, failures: 0, disabled_reason: null };
  const armed = { settings: on, hasSavedCard: true, balanceMicros: 5_000_000, crossing: 3, openSince: undefined };
  const claimedAgo = (ms: number) => new Date(NOW.getTime() - ms).toISOString();

  it.each([
    { case: 'at the threshold with no crossing open', facts: armed, plan: { kind: 'claim', crossing: 4 } },
    { case: 'above the threshold with no crossing open', facts: { ...armed, balanceMicros: 5_000_001 }, plan: { kind: 'none' } },
    {
      case: 'at the threshold while the crossing claimed 10 s ago is open',
      facts: { ...armed, openSince: claimedAgo(10_000) },
      plan: { kind: 'none' },
    },
    {
      case: 'at the threshold while the crossing claimed 3 minutes ago is open',
      facts: { ...armed, openSince: claimedAgo(180_000) },
      plan: { kind: 'resume', crossing: 3 },
    },
    {
      case: 'at the threshold while the crossing claimed 2 days ago is open',
      facts: { ...armed, openSince: claimedAgo(2 * 86_400_000) },
      plan: { kind: 'none' },
    },
    {
      case: 'above the threshold again while a crossing is open',
      facts: { ...armed, balanceMicros: 25_000_000, openSince: claimedAgo(10_000) },
      plan: { kind: 'end', crossing: 3 },
    },
    {
      case: 'turned off, at the threshold with no crossing open',
      facts: { ...armed, settings: { ...on, enabled: false } },
      plan: { kind: 'none' },
    },
    { case: 'at the threshold with no saved card', facts: { ...armed, hasSavedCard: false }, plan: { kind: 'none' } },
  ])('plans $plan.kind $case', ({ facts, plan }) => {
    expect(rechargePlan(facts, NOW.getTime())).toEqual(plan);
  });

  it('names one top-up per crossing of an account, the same each time it is asked', () => {
    expect(rechargeTopUpId('acct_a', 1)).toMatch(/^tu_[0-9a-f]{32}$/);
    expect(rechargeTopUpId('acct_a', 1)).toBe(rechargeTopUpId('acct_a', 1));
    expect(new Set([rechargeTopUpId('acct_a', 1), rechargeTopUpId('acct_a', 2), rechargeTopUpId('acct_b', 1)]).size).toBe(3);
  });
});

describe('autoRechargeBodySchema', () => {
  const parse = (body: unknown) => parseOrBadRequest(autoRechargeBodySchema, body);

  it.each([
    { enabled: true, threshold_usd: 20, amount_usd: 20 },
    { enabled: true, threshold_usd: 0, amount_usd: 5 },
    { enabled: false, threshold_usd: 1000, amount_usd: 5 },
  ])('accepts $amount_usd at a threshold of $threshold_usd (enabled: $enabled)', (body) => {
    expect(parse(body)).toEqual(body);
  });

  it('refuses, when on, an amount that would leave a balance at the threshold at or below it', () => {
    expect(() => parse({ enabled: true, threshold_usd: 1000, amount_usd: 5 })).toThrow('amount_usd must be at least threshold_usd');
  });
});

describe('topUpAmountSchema', () => {
  const parse = (amount_usd: unknown) => parseOrBadRequest(topUpAmountSchema('amount_usd'), amount_usd);

  it.each([5, 20, 19.99, 1000, 0.07 * 100])('accepts %s', (amount) => {
    expect(parse(amount)).toBe(amount);
  });

  it.each([
    { amount: 4.99, error: 'amount_usd must be at least 5' },
    { amount: 1000.01, error: 'amount_usd must be at most 1000' },
    { amount: 5.001, error: 'amount_usd has at most two decimals' },
    { amount: Number.NaN, error: 'amount_usd must be a number of dollars' },
    { amount: '10', error: 'amount_usd must be a number of dollars' },
    { amount: undefined, error: 'amount_usd is required' },
  ])('refuses $amount: $error', ({ amount, error }) => {
    expect(() => parse(amount)).toThrow(error);
  });
});

describe('understoodEvent', () => {
  const session = {
    id: 'cs_test_1',
    amount_total: 2000,
    payment_status: 'paid',
    payment_intent: 'pi_1',
    metadata: { account_id: 'acct_a', top_up_id: 'tu_1' },
  };
  const event = (type: string, object: unknown) => ({ id: 'evt_1', type, data: { object } });

  it('reads a paid checkout', () => {
    expect(understoodEvent(event('checkout.session.completed', session))).toEqual({
      kind: 'checkout_paid',
      eventId: 'evt_1',
      sessionId: 'cs_test_1',
      paymentIntentId: 'pi_1',
      amountCents: 2000,
      tags: { accountId: 'acct_a', topUpId: 'tu_1' },
    });
  });

  it('credits nothing for a completed checkout whose payment is still on its way', () => {
    expect(understoodEvent(event('checkout.session.completed', { ...session, payment_status: 'unpaid' }))).toMatchObject({
      kind: 'ignored',
    });
  });

  it('reads an expanded payment intent as its id', () => {
    expect(
      understoodEvent(event('checkout.session.async_payment_succeeded', { ...session, payment_intent: { id: 'pi_2' } })),
    ).toMatchObject({
      kind: 'checkout_paid',
      paymentIntentId: 'pi_2',
    });
  });

  it('reads the refunded total of a charge and a dispute with its fees', () => {
    expect(understoodEvent(event('charge.refunded', { id: 'ch_1', payment_intent: 'pi_1', amount_refunded: 700 }))).toEqual({
      kind: 'refunded',
      eventId: 'evt_1',
      chargeId: 'ch_1',
      paymentIntentId: 'pi_1',
      refundedCents: 700,
    });
    const dispute = { id: 'dp_1', payment_intent: 'pi_1', amount: 1000, status: 'won', balance_transactions: [{ fee: 1500 }] };
    expect(understoodEvent(event('charge.dispute.closed', dispute))).toMatchObject({
      kind: 'dispute_closed',
      amountCents: 1000,
      feeCents: 1500,
      won: true,
    });
  });

  it('ignores the event types it does not act on', () => {
    expect(understoodEvent(event('customer.created', {}))).toEqual({ kind: 'ignored', eventId: 'evt_1', type: 'customer.created' });
  });

  it('refuses an object that is not what its type says', () => {
    expect(() => understoodEvent(event('checkout.session.completed', { ...session, id: 'pi_1' }))).toThrow();
    expect(() => understoodEvent(event('charge.refunded', { id: 'ch_1', payment_intent: 'pi_1', amount_refunded: -1 }))).toThrow();
  });
});
