import { periodCharge } from '../../shared/domain/billing';
import { catalog } from '../../shared/domain/flavors';
import { usdToMicros } from '../../shared/domain/accounts';

const plan = catalog.get('s-1vcpu-2gb')!;
const HOUR = 3_600_000;

describe('periodCharge', () => {
  it.each([
    { state: 'running', paused_by: null, ms: HOUR, micros: 17_860 },
    { state: 'user-paused', paused_by: 'user' as const, ms: HOUR, micros: 4_465 },
    { state: 'billing-paused', paused_by: 'billing' as const, ms: HOUR, micros: 4_465 },
    { state: 'running', paused_by: null, ms: 5 * 60_000, micros: 1_488 },
    { state: 'user-paused', paused_by: 'user' as const, ms: 5 * 60_000, micros: 372 },
    { state: 'running', paused_by: null, ms: 0, micros: 0 },
  ])('charges $micros micro-dollars for $ms ms $state on s-1vcpu-2gb', ({ paused_by, ms, micros }) => {
    expect(periodCharge({ plan, paused_by }, ms)).toBe(micros);
  });

  it('charges the largest plan a quarter while paused, in whole micro-dollars', () => {
    const large = catalog.get('s-16vcpu-32gb')!;
    expect(periodCharge({ plan: large, paused_by: null }, 24 * HOUR)).toBe(6_857_040);
    expect(periodCharge({ plan: large, paused_by: 'user' }, 24 * HOUR)).toBe(1_714_260);
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
