import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { paymentWebhookRoute } from '../../shared/contracts/billing';
import { json } from '../../shared/http/responses';
import { receivePaymentWebhook } from '../../shared/domain/payments';

/** The signature is over the bytes the provider sent: the body is read raw, never parsed before it is verified. */
export const handler = route(paymentWebhookRoute, async (deps: Deps, { event }) => {
  const raw = event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64').toString('utf8') : (event.body ?? '');
  return json(200, await receivePaymentWebhook(deps, raw, event.headers['stripe-signature']));
});
