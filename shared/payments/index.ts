import { notBundled } from '../aws';
import type { Platform } from '../platform';
import type { PaymentProvider } from './provider';
import { stripeProvider } from './stripe';

const notInThisBundle = async (): Promise<never> => {
  throw notBundled('The payment provider');
};

/**
 * The runtime's payment provider (shared/payments/provider.ts): the Stripe adapter where the function declares
 * payments; elsewhere the bundle leaves the adapter out, and a call says why.
 */
export function paymentProvider(deps: Platform): PaymentProvider {
  if (typeof __BUNDLES_PAYMENTS__ === 'undefined' || __BUNDLES_PAYMENTS__) return stripeProvider(deps);
  return {
    startCheckout: notInThisBundle,
    chargeSavedCard: notInThisBundle,
    paymentFacts: notInThisBundle,
    checkoutNow: notInThisBundle,
    paymentNow: notInThisBundle,
    verifiedEvent: notInThisBundle,
  };
}
