import { standingOf, type AccountStanding } from '../../shared/model/account';

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
