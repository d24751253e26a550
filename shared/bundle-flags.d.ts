/**
 * Set for each function when it is bundled (infra/bundling.ts, from the access it declares): false where it does not
 * use that dependency, so that the bundler leaves out the code that loads it. Each loader tests its flag where it
 * imports, as `typeof FLAG === 'undefined' || FLAG`: undefined outside a bundle (the tests, the local runtime), where
 * everything is there.
 */
/** Step Functions: starting, describing or stopping workflows. */
declare const __BUNDLES_WORKFLOWS__: boolean | undefined;
/** Amazon SES: sending e-mail. */
declare const __BUNDLES_MAIL__: boolean | undefined;
/** EventBridge: publishing the service's events. */
declare const __BUNDLES_EVENTS__: boolean | undefined;
/** SQS: queueing webhook deliveries or console e-mails. */
declare const __BUNDLES_QUEUES__: boolean | undefined;
/** The AWS Encryption SDK (and KMS): sealing or opening customers' secrets. */
declare const __BUNDLES_SEALING__: boolean | undefined;
/** The payment provider's adapter (Stripe): taking payments or reading them. */
declare const __BUNDLES_PAYMENTS__: boolean | undefined;
/** Secrets Manager: reading the upstream token or the payment provider's keys. */
declare const __BUNDLES_SECRETS_MANAGER__: boolean | undefined;
