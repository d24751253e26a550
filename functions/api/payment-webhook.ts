import type { Deps } from '../../shared/domain/deps';
import { route } from '../../shared/http/route';
import { paymentWebhookRoute } from '../../shared/contracts/billing';
import { limitFailedAuthentication } from '../../shared/http/flood-guard';
import { json } from '../../shared/http/responses';
import { isInvalidSignature, receivePaymentWebhook } from '../../shared/domain/payments';

/** The signature is over the bytes the provider sent: the body is read raw, never parsed before it is verified. */
export const handler = route(paymentWebhookRoute, async (deps: Deps, { event }) => {
  const raw = event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64').toString('utf8') : (event.body ?? '');
  const receipt = await receivePaymentWebhook(deps, raw, event.headers['stripe-signature']).catch(async (error: unknown) => {
    // A forged or stale signature counts against its source address, as a failed authentication does.
    throw isInvalidSignature(error) ? await limitFailedAuthentication(deps, event, error) : error;
  });
  return json(200, receipt);
});
