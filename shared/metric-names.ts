/**
 * The service's own CloudWatch metrics: the functions publish them (observability.ts) and the dashboard and alarms
 * read them. Plain data, so that synthesizing the stack never builds the Powertools clients.
 */
export const METRICS_NAMESPACE = 'VpsService';

export const metricNames = {
  deploysAccepted: 'DeploysAccepted',
  provisionSucceeded: 'ProvisionSucceeded',
  provisionFailed: 'ProvisionFailed',
  provisionDuration: 'ProvisionDuration',
  rateLimited: 'RateLimited',
  upstreamErrors: 'UpstreamErrors',
  /** Upstream answers 401 (the token is wrong or revoked) and 429 (our upstream rate limit is spent), by the driver. */
  upstreamUnauthorized: 'UpstreamUnauthorized',
  upstreamThrottled: 'UpstreamThrottled',
  /** Instance details answered from the stored state where the live power state was due (marked in the answer). */
  storedStatusReads: 'StoredStatusReads',
  billingPauses: 'BillingPauses',
  reconcilerRepairs: 'ReconcilerRepairs',
  leakedServersDestroyed: 'LeakedServersDestroyed',
  /** Accounts reviewed on their checkpoint (a pause, a warning, a statement or a new projection). */
  accountReviews: 'AccountReviews',
  /** How long after its projected zero an account was billing-paused. */
  billingPauseLag: 'BillingPauseLag',
  /** Drift repaired by the sweep, one metric per kind. */
  driftServerVanished: 'DriftServerVanished',
  driftPowerChanged: 'DriftPowerChanged',
  driftSizeChanged: 'DriftSizeChanged',
  /** A read by id that did not find an instance's server: evidence of absence, not yet a conclusion. */
  serverAbsenceSuspected: 'ServerAbsenceSuspected',
  /** An instance lost by inference whose server was found again and restored. */
  serversReadopted: 'ServersReadopted',
  /** Servers no instance owns, found by the sweep and powered off; destroyed after a grace period. */
  orphanServersFound: 'OrphanServersFound',
  /** The sweep's blast-radius guard stopped its power-offs and destructions. */
  sweepGuardTripped: 'SweepGuardTripped',
  /** A stored server id that names a server without the instance's tag: never acted on. */
  foreignServerRefused: 'ForeignServerRefused',
  webhookDeliveries: 'WebhookDeliveries',
  webhookDeliveryFailures: 'WebhookDeliveryFailures',
  webhooksDisabled: 'WebhooksDisabled',
  /** Payment webhooks whose signature did not hold (forged, altered, stale). */
  paymentWebhookFailures: 'PaymentWebhookFailures',
  /** Payment events naming a top-up we do not have, or one they do not match: refused, nothing credited. */
  paymentsUnmatched: 'PaymentsUnmatched',
  /** Milliseconds the oldest top-up paid at the provider but not credited had been open when the reconciler found it. */
  uncreditedPaymentAge: 'UncreditedPaymentAge',
} as const;
export type MetricName = (typeof metricNames)[keyof typeof metricNames];
