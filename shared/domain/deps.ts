import type { Platform } from '../platform';
import type { WorkflowEngine } from '../workflows/engine';
import type { EventTransports } from '../events/ports';
import type { Mailer } from '../mail';
import type { PaymentProvider } from '../payments/provider';
import type { SshProbe } from '../upstream/ssh-probe';
import type { ApiKey } from '../store/api-keys';

/**
 * Everything a use case needs from its runtime, built once by the runtime's wiring (shared/wiring/aws.ts on AWS, the
 * local runtime's wiring locally) and handed in by the entry point (route, workflow step, consumer, scheduled job).
 */
export interface Deps extends Platform {
  readonly workflows: WorkflowEngine;
  /** Where events, webhook deliveries and console e-mails are handed on: EventBridge and SQS on AWS, in-process locally. */
  readonly transports: EventTransports;
  /** Where the service's e-mail is sent: SES on AWS, the mail folder locally. */
  readonly mail: Mailer;
  /** Card payments for top-ups: Stripe, or the local payments simulator through the same adapter. */
  readonly payments: PaymentProvider;
  /** Whether a customer's server answers SSH: a TCP probe of its address. */
  readonly ssh: SshProbe;
}

/** A Bearer request's key, found active, and the dependencies for work done as that request's (guarded by the key). */
export interface FoundKey {
  readonly apiKey: ApiKey;
  readonly deps: Deps;
}
