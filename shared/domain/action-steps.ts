import type { Deps } from './deps';
import { namedError } from '../model/errors';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import { getAccount, notBillingPausedCheck } from '../store/accounts';
import { getInstanceItem, updateInstanceWithRetry } from '../store/instances';
import { type InstanceChanges, type Instance } from '../model/instance';
import { finishJob, getJob } from '../store/jobs';
import { failedWith, type Job, type JobFinish } from '../model/job';
import type { ActionType } from '../model/actions';
import { upstream } from './upstream';
import { holdBillingPause } from './billing';
import { lookForStartedAction, settledActionOutcome, settleFromUpstream, startedAction } from '../model/convergence';
import { ownServer, readInstanceServer } from './server-guard';
import { failure, sshTimeoutFailure, type FailureReason } from '../model/failure';
import { sshReadiness, type SshReadiness } from './ssh-readiness';
import type * as z from 'zod';
import type {
  ActionStepInput,
  checkActionInputSchema,
  failActionInputSchema,
  findActionInputSchema,
  finishPowerInputSchema,
  finishResizeInputSchema,
  startActionInputSchema,
} from './step-inputs';

/** The upstream reported the action as errored. */
class UpstreamActionFailedError extends namedError('UpstreamActionFailedError') {}

/** The start of the action was not carried out upstream (its answer was lost, and the action never appeared). */
class ActionNotTakenError extends namedError('ActionNotTakenError') {}

/** The phase's budget ran out before the upstream's answer was known: the reconciler settles the job later. */
export class ActionOutcomeUnknownError extends namedError('ActionOutcomeUnknownError') {}

async function readInstanceAndJob(deps: Deps, input: ActionStepInput): Promise<{ instance: Instance; job: Job; serverId: number }> {
  const [instance, job] = await Promise.all([getInstanceItem(deps, input.instance_id), getJob(deps, input.job_id)]);
  if (instance?.upstream_id == null) throw new Error('the instance has no upstream server');
  if (!job) throw new Error(`job ${input.job_id} does not exist`);
  return { instance, job, serverId: instance.upstream_id };
}

/**
 * Fails the step once the action's budget is spent, counted from `startedAt`: when the phase being waited for began
 * (the execution's start for the action the API started, the moment the workflow started it for a later phase).
 */
function ensureWithinBudget(deps: Deps, startedAt: string): void {
  const elapsedSeconds = (deps.clock.now().getTime() - Date.parse(startedAt)) / 1000;
  if (elapsedSeconds > deps.config.actionTimeoutSeconds) {
    throw new ActionOutcomeUnknownError(`outcome still unknown after ${Math.round(elapsedSeconds)} s`);
  }
}

/**
 * Finds the action whose start answer was lost, in the server's own action list: its id; null to look again later
 * (a request may still be in flight upstream); ActionNotTakenError once the window has passed without it.
 */
export async function findActionStep(deps: Deps, input: z.output<typeof findActionInputSchema>): Promise<number | null> {
  ensureWithinBudget(deps, input.started_at);
  const { job, serverId } = await readInstanceAndJob(deps, input);
  const actions = await (await upstream(deps)).listActions(serverId);
  const outcome = lookForStartedAction(
    actions,
    input.action_type,
    job.started_at,
    deps.clock.now().getTime(),
    deps.config.unknownOutcomeWindowSeconds * 1000,
  );
  if (outcome.kind === 'found') return outcome.actionId;
  if (outcome.kind === 'keep-looking') return null;
  throw new ActionNotTakenError(`no ${input.action_type} action appeared upstream`);
}

/**
 * Starts the resize itself (to the plan reserved at acceptance), the power-on that follows it, or the power-off that
 * holds a billing pause. A retry after a
 * lost answer first looks for the action in the server's list, so it is never started twice.
 */
export async function startActionStep(deps: Deps, input: z.output<typeof startActionInputSchema>): Promise<{ action_id: number }> {
  const { instance, job, serverId } = await readInstanceAndJob(deps, input);
  const target = instance.pending_plan;
  if (input.type === 'resize' && !target) throw new Error('no resize target is reserved');
  const driver = await upstream(deps);
  const already = startedAction(await driver.listActions(serverId), input.type, job.started_at, input.after_action_id ?? 0);
  if (already) return { action_id: already.id };
  await ownServer(deps, driver, instance);
  const request =
    input.type === 'resize' ? { type: 'resize' as const, size: target?.flavor ?? '', disk: true as const } : { type: input.type };
  const action = await driver.startAction(serverId, request);
  return { action_id: action.id };
}

/**
 * Reads the action's status. Failing reads propagate (the workflow retries with backoff and keeps checking); once
 * the budget is spent with the outcome unknown, the job is left to the reconciler, never settled from a guess.
 */
export async function checkActionStep(deps: Deps, input: z.output<typeof checkActionInputSchema>): Promise<{ done: boolean }> {
  ensureWithinBudget(deps, input.started_at);
  const action = await (await upstream(deps)).getAction(input.action_id);
  if (action.status === 'errored') throw new UpstreamActionFailedError(`upstream action ${action.id} (${action.type}) errored`);
  return { done: action.status === 'completed' };
}

function poweredState(type: Exclude<ActionType, 'resize'>, pausedBy: 'user' | 'billing'): InstanceChanges {
  if (type === 'power_off') return { status: 'stopped', paused_by: pausedBy };
  return type === 'power_on' ? { status: 'active', paused_by: null } : { status: 'active' };
}

/** How the job of an action that left its server running ends: succeeded once SSH answered, failed when it did not. */
const endedBy = (deps: Deps, jobId: string, readiness: SshReadiness | undefined): JobFinish => ({
  job_id: jobId,
  outcome: readiness?.kind === 'timed_out' ? failedWith(sshTimeoutFailure) : { status: 'succeeded' },
  at: deps.clock.now().toISOString(),
});

/** The job still waits for the server's SSH: the workflow calls the step again after `wait_seconds`. */
type AwaitingSsh = { readonly held: false; readonly awaiting_ssh: true; readonly ssh_since: string; readonly wait_seconds: number };

/**
 * Before an action that leaves the server running (power-on, reboot, a resize of a running server) ends, its SSH must
 * answer: until it does (or the wait is over) the instance keeps its status and the job runs on. Undefined for an
 * action that leaves the server off.
 */
async function awaitSsh(
  deps: Deps,
  instanceId: number,
  since: string | undefined,
): Promise<{ readiness: SshReadiness; since: string } | undefined> {
  const instance = await getInstanceItem(deps, instanceId);
  if (!instance || instance.deleted_at !== null) return undefined;
  const from = since ?? deps.clock.now().toISOString();
  return { readiness: await sshReadiness(deps, instance, from), since: from };
}

const awaiting = (since: string, readiness: { wait_seconds: number }): AwaitingSsh => ({
  held: false,
  awaiting_ssh: true,
  ssh_since: since,
  wait_seconds: readiness.wait_seconds,
});

/**
 * Records the completed power action, frees the instance's action slot and ends the job, in one transaction. A
 * power-on or reboot that finds its account billing-paused does not finish: it starts the system's power-off, which
 * the same job then waits for (`held`), so the pause holds for work that finishes during it. A power-on or reboot
 * ends once the server's SSH answers (`awaiting_ssh` until then); if it never does, the instance is active (the
 * upstream runs it) and the job fails with `ssh_timeout`.
 */
export async function finishPowerStep(
  deps: Deps,
  input: z.output<typeof finishPowerInputSchema>,
): Promise<{ held: false; awaiting_ssh: false } | AwaitingSsh | { held: true; action_id: number }> {
  if (input.type !== 'power_off' && (await accountBillingPaused(deps, input.instance_id))) {
    logger.warn('the account was billing-paused while the server came up; powering it off', { type: input.type });
    return { held: true, ...(await startActionStep(deps, { ...input, type: 'power_off', after_action_id: input.action_id })) };
  }
  const ssh = input.type === 'power_off' ? undefined : await awaitSsh(deps, input.instance_id, input.ssh_since);
  if (ssh?.readiness.kind === 'waiting') return awaiting(ssh.since, ssh.readiness);
  const ended = endedBy(deps, input.job_id, ssh?.readiness);
  await updateInstanceWithRetry(deps, input.instance_id, (instance) =>
    instance.active_job_id === input.job_id && instance.deleted_at === null
      ? {
          changes: { ...poweredState(input.type, input.paused_by), active_job_id: null },
          finish: ended,
          // A pause applied since the check above passed this busy instance by: the finish is refused, the step's
          // retry finds the account paused and holds it, so no server comes up running on a paused account.
          checks: input.type === 'power_off' ? [] : [notBillingPausedCheck(deps, instance.account_id)],
        }
      : undefined,
  );
  await finishJob(deps, input.job_id, ended.outcome, ended.at);
  return { held: false, awaiting_ssh: false };
}

async function accountBillingPaused(deps: Deps, instanceId: number): Promise<boolean> {
  const instance = await getInstanceItem(deps, instanceId);
  return instance !== undefined && (await getAccount(deps, instance.account_id))?.billing_paused === true;
}

/**
 * Swaps plan and capacity at the end of a resize: the new tier was held since acceptance; the old one goes back. A
 * server that was running comes back `active` once its SSH answers (`awaiting_ssh` until then, as for a power-on).
 */
export async function finishResizeStep(
  deps: Deps,
  input: z.output<typeof finishResizeInputSchema>,
): Promise<{ awaiting_ssh: false } | AwaitingSsh> {
  const ssh = input.previous_status === 'active' ? await awaitSsh(deps, input.instance_id, input.ssh_since) : undefined;
  if (ssh?.readiness.kind === 'waiting') return awaiting(ssh.since, ssh.readiness);
  const ended = endedBy(deps, input.job_id, ssh?.readiness);
  await updateInstanceWithRetry(deps, input.instance_id, (instance) =>
    instance.active_job_id === input.job_id && instance.pending_plan && instance.deleted_at === null
      ? {
          changes: { plan: instance.pending_plan, pending_plan: null, status: input.previous_status, active_job_id: null },
          release: [{ kind: 'tier', flavor: instance.plan.flavor }],
          finish: ended,
        }
      : undefined,
  );
  await finishJob(deps, input.job_id, ended.outcome, ended.at);
  await holdBillingPause(deps, input.instance_id);
  return { awaiting_ssh: false };
}

/** What a client may read about an action's failure: never upstream or internal details. */
const actionFailures: Record<string, FailureReason> = {
  UpstreamActionFailedError: failure('upstream_error', 'The upstream action failed'),
  ActionAbandoned: failure('interrupted', 'The action was interrupted before it took effect; the instance shows what the upstream reports'),
  ActionNotTakenError: failure('action_not_taken', 'The upstream did not carry out the action'),
  UpstreamPermanentError: failure('upstream_error', 'The upstream refused the action'),
  UpstreamCapacityError: failure('capacity', 'The upstream has no room for this flavor now'),
  UpstreamTransientError: failure('upstream_error', 'The upstream kept failing'),
};
const actionFailure = (errorName: string | undefined) => actionFailures[errorName ?? ''] ?? failure('upstream_error', 'Upstream error');

/**
 * Settles an action that failed or was abandoned, from finished upstream facts only: while an upstream action of
 * the job is still in progress nothing is written (false; the reconciler comes back). Otherwise the instance takes
 * the state the upstream reports, its slot is freed, capacity follows the plan it really has, and the job ends as
 * the upstream shows (succeeded when the action took effect, failed with a text safe to show otherwise), all in one
 * transaction. A server concluded gone (never one that a single read did not find) makes the instance failed.
 */
export async function settleAction(deps: Deps, instanceId: number, jobId: string, errorName: string | undefined): Promise<boolean> {
  const [instance, job] = await Promise.all([getInstanceItem(deps, instanceId), getJob(deps, jobId)]);
  const at = deps.clock.now().toISOString();
  let outcome = failedWith(actionFailure(errorName));
  if (instance && job && instance.active_job_id === jobId && instance.deleted_at === null && instance.upstream_id !== null) {
    const driver = await upstream(deps);
    const reading = await readInstanceServer(deps, driver, instance);
    // A server not found now is not a lost one: the job waits for the reconciler, which reads it again later.
    const server = reading.kind === 'found' ? reading.server : null;
    const actions = server ? await driver.listActions(server.id) : [];
    if (reading.kind === 'unconfirmed' || settleFromUpstream(instance, job.started_at, server, actions).kind === 'wait') {
      logger.warn('action outcome not final yet; left for the reconciler', { cause: errorName, server: reading.kind });
      return false;
    }
    await updateInstanceWithRetry(deps, instanceId, (current) => {
      if (current.active_job_id !== jobId || current.deleted_at !== null) return undefined;
      const settlement = settleFromUpstream(current, job.started_at, server, actions);
      if (settlement.kind === 'wait') return undefined;
      outcome = settledActionOutcome(job.type, current, job.started_at, server, actions, actionFailure(errorName));
      return { ...settlement, finish: { job_id: jobId, outcome, at } };
    });
    logger.warn('action settled to the upstream state', {
      cause: errorName,
      outcome: outcome.status,
      upstream_status: server?.status ?? 'gone',
    });
    if (errorName?.startsWith('Upstream')) countMetric(metricNames.upstreamErrors);
  }
  await finishJob(deps, jobId, outcome, at);
  return true;
}

export async function failActionStep(deps: Deps, input: z.output<typeof failActionInputSchema>): Promise<void> {
  await settleAction(deps, input.instance_id, input.job_id, input.error?.Error);
}
