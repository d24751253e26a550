import { standingOf, standingRefusal, type AccountStanding } from '../../shared/model/account';
import { statusOf } from '../../shared/http/failure-status';

describe('account standing', () => {
  it.each<[string, Parameters<typeof standingOf>[0], AccountStanding]>([
    ['a confirmed, unsuspended account stands', { confirmed: true, suspended: false, deleted_at: null }, 'in-standing'],
    ['a missing account is gone', undefined, 'gone'],
    ['a deleted account is gone, whatever else it says', { confirmed: true, suspended: true, deleted_at: '2026-11-01T00:00:00Z' }, 'gone'],
    ['a suspended account is suspended even when unconfirmed', { confirmed: false, suspended: true, deleted_at: null }, 'suspended'],
    ['an unconfirmed account is unconfirmed', { confirmed: false, suspended: false, deleted_at: null }, 'unconfirmed'],
    ['a stored item without the suspension flag does not stand', { confirmed: true, deleted_at: null }, 'suspended'],
    ['a stored item without the confirmation flag does not stand', { suspended: false }, 'unconfirmed'],
  ])('%s', (_, account, standing) => {
    expect(standingOf(account)).toBe(standing);
  });
});

describe('standingRefusal', () => {
  const stands = { confirmed: true, suspended: false, deleted_at: null };

  it.each([
    { why: 'an account that stands', account: stands, gone: 'Account not found' as const, refusal: undefined },
    { why: 'no account', account: undefined, gone: 'API key owner not found' as const, refusal: [401, 'API key owner not found'] },
    { why: 'no account, for a session', account: undefined, gone: 'Account not found' as const, refusal: [401, 'Account not found'] },
    {
      why: 'a deleted account, suspended and unconfirmed too',
      account: { confirmed: false, suspended: true, deleted_at: '2026-01-01T00:00:00.000Z' },
      gone: 'Account not found' as const,
      refusal: [401, 'Account not found'],
    },
    {
      why: 'a suspended account that is also unconfirmed',
      account: { confirmed: false, suspended: true, deleted_at: null },
      gone: 'Account not found' as const,
      refusal: [403, 'Account suspended'],
    },
    {
      why: 'an unconfirmed account',
      account: { ...stands, confirmed: false },
      gone: 'Account not found' as const,
      refusal: [403, 'Account not confirmed'],
    },
  ])('answers $refusal for $why', ({ account, gone, refusal }) => {
    const failure = standingRefusal(account, gone);

    expect(failure && [statusOf(failure), failure.message]).toEqual(refusal);
  });
});
