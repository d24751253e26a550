import * as z from './zod';

/**
 * Why an instance or a job failed, in a form a program can branch on (`code`) and a person can read (`message`). The
 * messages are the service's own: never the upstream's or an internal error's text.
 */
export const failureCodes = [
  /** The upstream refused the work or kept failing. */
  'upstream_error',
  /** The upstream had no room for the server (its size or the account's server limit). */
  'capacity',
  /** The server did not come up within the provisioning budget. */
  'provision_timeout',
  /** The server came up but SSH never answered within the wait. */
  'ssh_timeout',
  /** The action was not carried out upstream. */
  'action_not_taken',
  /** The account's billing was paused. */
  'billing_paused',
  /** The server no longer exists upstream, or the one found is not the instance's. */
  'server_lost',
  /** The work was interrupted or cancelled (the instance deleted, the run lost) and settled to what is known. */
  'interrupted',
] as const;
export type FailureCode = (typeof failureCodes)[number];

export const failureSchema = z.strictObject({
  code: z.enum(failureCodes),
  message: z.string(),
});
export type FailureReason = z.infer<typeof failureSchema>;

export const failure = (code: FailureCode, message: string): FailureReason => ({ code, message });

/** A running server whose SSH did not answer within the wait. */
export const sshTimeoutFailure = failure('ssh_timeout', 'The server started but SSH did not answer in time');

/** Why an instance lost its server: it is gone, or the server found under its id is someone else's. */
export const lostFailures = {
  gone: failure('server_lost', 'The server no longer exists upstream'),
  foreign: failure('server_lost', 'The server found upstream is not this instance’s; it was left untouched'),
} as const;
