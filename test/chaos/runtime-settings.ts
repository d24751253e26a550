/**
 * The service as a chaos run needs it: short upstream timeouts and budgets, so that every fault bites and every phase
 * ends soon; orphans destroyed and absences concluded after seconds instead of hours, so that a run sees both through.
 */
export const CHAOS_RUNTIME = {
  bootMs: 400,
  actionMs: 200,
  waitMs: 100,
  retryMs: 30,
  schedules: false,
  env: {
    UPSTREAM_REQUEST_TIMEOUT_MS: '600',
    UPSTREAM_TIMEOUT_MS: '1500',
    LIVE_STATUS_TIMEOUT_MS: '300',
    UNKNOWN_OUTCOME_WINDOW_SECONDS: '2',
    PROVISION_TIMEOUT_SECONDS: '30',
    ACTION_TIMEOUT_SECONDS: '30',
    ORPHAN_GRACE_SECONDS: '5',
    ABSENCE_WINDOW_SECONDS: '3',
    DESTRUCTION_CONFIRM_WINDOW_SECONDS: '1',
    // A silence of the servers' SSH longer than this fails the provision (ssh_timeout) or the power-on's job.
    SSH_WAIT_SECONDS: '8',
  },
} as const;
