import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { eventsFromChange } from '../../shared/domain/events';
import { noticeMail } from '../../shared/domain/account-notices';

const AT = '2026-11-25T10:00:00.000Z';
const account = {
  account_id: 'acct_1',
  email: 'ann@example.com',
  balance: 2_500_000,
  billing_paused: false,
  balance_notice: 'none',
  auto_recharge: null,
};
const change = (before: Record<string, unknown>, after: Record<string, unknown>) =>
  eventsFromChange('accounts', {
    eventName: 'MODIFY',
    dynamodb: { OldImage: marshall(before, { removeUndefinedValues: true }), NewImage: marshall(after, { removeUndefinedValues: true }) },
  });

describe('account events from the accounts stream', () => {
  it('says billing paused, then resumed, with the balance at the time', () => {
    const paused = { ...account, balance: -1_000_000, billing_paused: true, billing_paused_at: AT };

    const [pause] = change(account, paused);
    const [resume] = change(paused, {
      ...paused,
      balance: 9_000_000,
      billing_paused: false,
      billing_paused_at: '2026-11-25T11:00:00.000Z',
    });

    expect(pause).toMatchObject({
      type: 'account.billing_paused',
      time: AT,
      account_id: 'acct_1',
      instance_id: null,
      data: { balance_usd: '-1.00' },
    });
    expect(resume).toMatchObject({ type: 'account.billing_resumed', data: { balance_usd: '9.00' } });
    expect(pause?.id).toMatch(/^evt_[0-9a-f]{32}$/);
  });

  it('reads an empty map that carries no type, as DynamoDB Local streams one', () => {
    const paused = { ...account, balance: -1_000_000, billing_paused: true, billing_paused_at: AT };
    const streamedLocally = (image: Record<string, unknown>) => ({
      ...marshall(image, { removeUndefinedValues: true }),
      burning: {} as AttributeValue,
      notes: { L: [{ M: { empty: {} as AttributeValue } }] },
    });

    const events = eventsFromChange('accounts', {
      eventName: 'MODIFY',
      dynamodb: { OldImage: streamedLocally(account), NewImage: streamedLocally(paused) },
    });

    expect(events.map((event) => [event.type, event.data])).toEqual([['account.billing_paused', { balance_usd: '-1.00' }]]);
  });

  it('warns when the runway level deepens, and not when it stays or recovers', () => {
    const low = { ...account, balance_notice: 'below_24h', balance_notice_at: AT };

    expect(change(account, low).map((event) => [event.type, event.data])).toEqual([
      ['account.balance_low', { level: 'below_24h', balance_usd: '2.50' }],
    ]);
    expect(change(low, { ...low, balance: 2_000_000 })).toEqual([]);
    expect(change(low, { ...low, balance_notice: 'none' })).toEqual([]);
    expect(change(low, { ...low, balance_notice: 'below_1h' }).map((event) => event.data)).toEqual([
      { level: 'below_1h', balance_usd: '2.50' },
    ]);
  });

  it('says auto-recharge turned itself off, with the reason', () => {
    const on = { ...account, auto_recharge: { enabled: true, threshold_micros: 1, amount_micros: 1, failures: 2, disabled_reason: null } };
    const off = {
      ...on,
      auto_recharge: { ...on.auto_recharge, enabled: false, failures: 3, disabled_reason: 'Turned off', disabled_at: AT },
    };

    expect(change(on, off).map((event) => [event.type, event.data])).toEqual([
      ['account.auto_recharge_disabled', { reason: 'Turned off' }],
    ]);
    expect(change(on, { ...on, auto_recharge: { ...on.auto_recharge, enabled: false } })).toEqual([]);
  });

  it('gives the same change the same id however often it is read', () => {
    const paused = { ...account, billing_paused: true, billing_paused_at: AT };

    expect(change(account, paused)[0]?.id).toBe(change(account, paused)[0]?.id);
  });

  it('makes nothing of a balance that moved alone (the meter, a credit)', () => {
    expect(change(account, { ...account, balance: 1 })).toEqual([]);
  });
});

describe('noticeMail', () => {
  it.each([
    [
      'account.balance_low',
      { level: 'below_1h', balance_usd: '0.40' },
      'Your balance runs out in less than an hour',
      'Your balance is $0.40',
    ],
    [
      'account.balance_low',
      { level: 'below_24h', balance_usd: '3.00' },
      'Your balance runs out in less than a day',
      'runs out in less than a day',
    ],
    ['account.billing_paused', { balance_usd: '-0.10' }, 'Billing paused: your servers are being powered off', 'cannot be powered on'],
    ['account.billing_resumed', { balance_usd: '20.00' }, 'Billing resumed', 'stay off until you power them on'],
    [
      'account.auto_recharge_disabled',
      { reason: 'Turned off after 3 failed attempts in a row' },
      'Auto-recharge is turned off',
      'Turned off after 3',
    ],
  ] as const)('writes %s as "%s"', (type, data, subject, text) => {
    const event = { id: 'evt_1', type, time: AT, account_id: 'acct_1', instance_id: null, sequence: null, data } as Parameters<
      typeof noticeMail
    >[0];

    const mail = noticeMail(event, 'ann@example.com', 'https://console.example.com/');

    expect(mail).toMatchObject({ to: 'ann@example.com', subject });
    expect(mail.text).toContain(text);
    expect(mail.text).toContain('https://console.example.com/#/billing');
  });
});
