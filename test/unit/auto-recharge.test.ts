import type { PaymentProvider } from '../../shared/payments/provider';
import { newAccountRecord } from '../../shared/domain/accounts';
import { reviewFunding } from '../../shared/domain/funding';
import { insertAccount } from '../../shared/store/accounts';
import { getTopUp } from '../../shared/store/top-ups';
import { memoryDeps } from '../support/unit-deps';

const NOW = new Date('2026-11-25T12:00:00.000Z');
const ACCOUNT = 'acct_resume';
/** The top-up of the account's first crossing. */
const FIRST_CROSSING_TOP_UP = 'tu_55b2ca8be3da56827074b20d62a80b35';

/** An account at its auto-recharge threshold whose first crossing was claimed `agoMs` ago and never charged. */
async function claimedAndLeft(agoMs: number) {
  const charges: Parameters<PaymentProvider['chargeSavedCard']>[0][] = [];
  const { deps } = memoryDeps({}, { clock: { now: () => NOW } });
  const payments = {
    chargeSavedCard: async (charge) => {
      charges.push(charge);
      return { outcome: 'succeeded', paymentIntentId: 'pi_first' };
    },
  } as Pick<PaymentProvider, 'chargeSavedCard'> as PaymentProvider;
  await insertAccount(deps, {
    ...newAccountRecord({ accountId: ACCOUNT, email: 'ann@example.com', confirmed: true, suspended: false }),
    balance: 5_000_000,
    payment_customer_id: 'cus_1',
    payment_method_id: 'pm_1',
    auto_recharge: { enabled: true, threshold_micros: 5_000_000, amount_micros: 20_000_000, failures: 0, disabled_reason: null },
    recharge_crossing: 1,
    recharge_open_since: new Date(NOW.getTime() - agoMs).toISOString(),
  });
  return { deps: { ...deps, payments }, charges };
}

describe('reviewFunding', () => {
  it('charges a crossing whose claimant died before charging, once, under the crossing’s own top-up', async () => {
    const { deps, charges } = await claimedAndLeft(3 * 60_000);

    await reviewFunding(deps, ACCOUNT);
    await reviewFunding(deps, ACCOUNT);

    expect(charges).toEqual([
      { topUpId: FIRST_CROSSING_TOP_UP, accountId: ACCOUNT, customerId: 'cus_1', paymentMethodId: 'pm_1', amountCents: 2000 },
    ]);
    expect(await getTopUp(deps, FIRST_CROSSING_TOP_UP)).toMatchObject({
      kind: 'auto_recharge',
      status: 'open',
      payment_intent_id: 'pi_first',
    });
  });

  it('charges nothing while the crossing’s claimant may still be charging it', async () => {
    const { deps, charges } = await claimedAndLeft(10_000);

    await reviewFunding(deps, ACCOUNT);

    expect(charges).toEqual([]);
  });
});
