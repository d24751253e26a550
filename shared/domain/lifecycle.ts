import { balanceAt } from '../model/burn';
import type { Deps } from './deps';
import { logger } from '../observability';
import { stillBillingPausedCheck, type Account } from '../store/accounts';
import { getInstanceItem, getOwnedInstance, updateInstanceAtVersion, updateInstanceWithRetry } from '../store/instances';
import { CapacityExhaustedError } from '../model/capacity';
import { type Instance } from '../model/instance';
import { finishJob, getJob } from '../store/jobs';
import { failedWith, type Job } from '../model/job';
import { failure, type FailureReason } from '../model/failure';
import { assertRequestStillAuthorized } from '../store/request-guard';
import { unguarded } from '../request-guard';
import type { ActionBody, ActionResult, DeleteResult } from '../schemas/instances';
import { judgeAction, type ActionType } from '../model/actions';
import type { InstanceStatus } from '../model/instance-status';
import { upstreamForRequests } from './upstream';
import {
  UpstreamBudgetSpentError,
  UpstreamDeadlineError,
  UpstreamPermanentError,
  UpstreamTransientError,
  type UpstreamActionRequest,
} from '../upstream/driver';
import { refusedUnprocessed, withTransientRetry } from '../upstream/retry';
import { Failure, badRequest, namedError, instanceNotFound, lifecycleConflict, serviceUnavailable } from '../model/errors';
import { labelSetRefusal, patchLabels } from '../model/labels';
import type { InstanceDetail, UpdateInstanceBody } from '../schemas/instances';
import { toInstanceDetail } from './views';
import { openInstanceSecrets } from './instance-secrets';
import { orderablePlan, type Plan } from '../model/flavors';
import { newJob } from './jobs';
import { workflowOfJob } from '../workflows/jobs-to-workflows';
import { startKnownNotTaken } from '../model/convergence';
import { ownServer, ServerNotOursError } from './server-guard';
import { retry, retryPolicies, TRY_AGAIN } from '../retry';

/** Retry-After when the upstream request budget refused a call: about the time it takes to earn a call back. */
const BUDGET_RETRY_AFTER_SECONDS = 2;

/**
 * The spec's 502; when it was the service's own upstream request budget that kept the call back (nothing was sent),
 * the answer says so, and when to try again.
 */
const upstreamError = (cause?: unknown) =>
  cause instanceof UpstreamBudgetSpentError
    ? new Failure(
        'upstream_error',
        'Upstream error',
        { message: 'Nothing was sent upstream: the service’s upstream request budget is spent for now; try again after Retry-After' },
        { 'Retry-After': String(BUDGET_RETRY_AFTER_SECONDS) },
      )
    : new Failure('upstream_error', 'Upstream error');

/** The 409 for `type` on the instance as it is now, naming the job it is busy with, if any. */
async function conflictWith(deps: Deps, instance: Instance, type: ActionType): Promise<Failure> {
  const running = instance.active_job_id === null ? undefined : await getJob(deps, instance.active_job_id);
  return lifecycleConflict(instance.status, type.replace('_', ' '), running?.type);
}

/** The upstream call that begins an action, made while the client waits so that a refusal can answer 502. */
function firstUpstreamAction(
  type: ActionType,
  instance: Instance,
  target: Plan | undefined,
): { request: UpstreamActionRequest; phase: string } {
  switch (type) {
    case 'power_on':
      return { request: { type: 'power_on' }, phase: 'power' };
    case 'power_off':
      return { request: { type: 'shutdown' }, phase: 'power' };
    case 'reboot':
      return { request: { type: 'reboot' }, phase: 'power' };
    case 'resize':
      return instance.status === 'active'
        ? { request: { type: 'shutdown' }, phase: 'shutdown' }
        : { request: { type: 'resize', size: target?.flavor ?? '', disk: true }, phase: 'resize' };
  }
}

/** Undoes an accepted action that the upstream refused: status, lock and any reserved tier go back as they were. */
async function withdrawAction(deps: Deps, instance: Instance, job: Job, reason: FailureReason): Promise<void> {
  const finish = { job_id: job.job_id, outcome: failedWith(reason), at: deps.clock.now().toISOString() };
  await updateInstanceWithRetry(deps, instance.instance_id, (current) =>
    // A delete that came in meanwhile owns the instance now, capacity included.
    current.active_job_id === job.job_id && current.deleted_at === null
      ? {
          changes: { status: instance.status, active_job_id: null, pending_plan: null },
          release: current.pending_plan ? [{ kind: 'tier', flavor: current.pending_plan.flavor }] : [],
          finish,
        }
      : undefined,
  );
  await finishJob(deps, job.job_id, finish.outcome, finish.at);
}

/**
 * POST /instances/{id}/actions after the body checks: lookup, billing, balance, state and resize rules, capacity;
 * then the action is recorded with its job (holding the instance's one action slot), its first upstream call is
 * made, and its workflow takes it from there.
 */
export async function performAction(
  deps: Deps,
  account: Account,
  instanceId: number | undefined,
  body: ActionBody,
  found?: Promise<Instance | undefined>,
): Promise<ActionResult> {
  const target = body.type === 'resize' ? orderablePlan(body.flavor ?? '') : undefined;
  const instance = await (found ?? (instanceId === undefined ? undefined : getOwnedInstance(deps, instanceId, account.account_id)));
  if (!instance) throw instanceNotFound();
  const verdict = judgeAction({ ...account, balance: balanceAt(account, deps.clock.now().getTime()) }, instance, body.type, target);
  if (verdict.kind === 'done') return { ok: true, action: body.type, job_id: null };
  if (verdict.kind === 'refused') throw verdict.failure;
  if (verdict.kind === 'conflict') throw await conflictWith(deps, instance, body.type);
  const job = await launchAction(deps, instance, body.type, target, 'user');
  return { ok: true, action: body.type, job_id: job.job_id };
}

/**
 * Powers a running instance off for a billing pause, through the same path as a client's power_off; the
 * instance is then marked `paused_by: billing`. Undefined when it could not be done now (busy or upstream
 * refused): the next meter run tries again.
 */
export async function powerOffForBilling(deps: Deps, instance: Instance): Promise<Job | undefined> {
  try {
    return await launchAction(deps, instance, 'power_off', undefined, 'billing');
  } catch (error) {
    if (error instanceof Failure) return undefined;
    throw error;
  }
}

/**
 * Records an accepted action with its job (taking the instance's one action slot and, for a resize, the target
 * tier), makes its first upstream call, and starts its workflow.
 */
async function launchAction(
  deps: Deps,
  instance: Instance,
  type: ActionType,
  target: Plan | undefined,
  pausedBy: 'user' | 'billing',
): Promise<Job> {
  const job = newJob(type, instance);
  const { request, phase } = firstUpstreamAction(type, instance, target);
  const serverId = instance.upstream_id;
  if (serverId === null) throw new Error(`instance ${instance.instance_id} is ${instance.status} without an upstream server`);
  // The budget of the two calls that start it (the server's read, the action); an action refused after it was taken
  // leaves two tokens unused.
  const driver = await upstreamForRequests(deps, 2);
  try {
    // One read, not retried: the client's time is kept for the start itself.
    await ownServer(deps, driver, instance);
  } catch (error) {
    if (error instanceof ServerNotOursError) throw upstreamError();
    if (!(error instanceof UpstreamPermanentError || error instanceof UpstreamTransientError)) throw error;
    // Nothing was recorded or sent to the server: the action did not happen.
    throw upstreamError(error);
  }
  // Accepted after the server's read, which can take long: the write holds only while the request's key does, so a
  // key revoked during the read gets its 401 and nothing goes upstream.
  let accepted: boolean;
  try {
    accepted = await updateInstanceAtVersion(deps, instance, {
      changes: target ? { active_job_id: job.job_id, status: 'resizing', pending_plan: target } : { active_job_id: job.job_id },
      reserve: target ? [{ kind: 'tier', flavor: target.flavor }] : [],
      job,
      // The system powers off only an account that is still paused when the action is recorded.
      checks: pausedBy === 'billing' ? [stillBillingPausedCheck(deps, instance.account_id)] : [],
    });
  } catch (error) {
    if (error instanceof CapacityExhaustedError) throw serviceUnavailable('Tier capacity exhausted');
    throw error;
  }
  if (!accepted) {
    // Something else changed the instance since it was read: report the state it is in now.
    const current = await getInstanceItem(deps, instance.instance_id);
    if (!current || current.deleted_at !== null) throw instanceNotFound();
    throw await conflictWith(deps, current, type);
  }

  let actionId: number | null;
  try {
    // Only refusals are sent again: a timed-out action may have been taken, and a second one would be refused.
    // Before each attempt after the first the request's key is checked again: once it is revoked, nothing more goes
    // upstream (the first follows the write that accepted the action, which held only while the key did).
    let attempts = 0;
    const attempt = async () => {
      if (attempts++ > 0) await assertRequestStillAuthorized(deps);
      return driver.startAction(serverId, request);
    };
    actionId = (await withTransientRetry(attempt, { retryable: refusedUnprocessed })).id;
  } catch (error) {
    if (error instanceof Failure) {
      await withdrawAction(unguarded(deps), instance, job, failure('interrupted', 'The request was no longer authorized'));
      throw error;
    }
    if (!(error instanceof UpstreamPermanentError || error instanceof UpstreamTransientError)) throw error;
    // A start the driver did not send for lack of time is as known as a refusal.
    if (error instanceof UpstreamDeadlineError || startKnownNotTaken(error)) {
      logger.warn('upstream refused an action', { type, status: error.status });
      await withdrawAction(deps, instance, job, failure('upstream_error', 'Upstream error'));
      throw upstreamError(error);
    }
    // The answer was lost, not the action: the workflow finds out from the server's action list what was done.
    logger.warn('upstream answer to an action start was lost; the workflow looks for the action', { type, status: error.status });
    actionId = null;
  }

  try {
    await deps.workflows.start(workflowOfJob[type], job, {
      type,
      action_id: actionId,
      action_type: request.type,
      phase,
      previous_status: instance.status,
      paused_by: pausedBy,
    });
  } catch (error) {
    // The action went upstream and is recorded: it is accepted all the same, and the reconciler settles its job to
    // what the upstream shows once no action of it is in progress.
    logger.error('could not start the action workflow; the reconciler settles the action', { error, type });
  }
  return job;
}

/**
 * DELETE /instances/{id}: the instance leaves the API at once (deleted_at, status deleting) together with its
 * delete job; the delete workflow stops whatever else runs for it and destroys it upstream.
 */
export function deleteInstance(
  deps: Deps,
  account: Account,
  instanceId: number | undefined,
  found?: Promise<Instance | undefined>,
): Promise<DeleteResult> {
  let first = found;
  return retry(
    retryPolicies.requestVersionConflict,
    async () => {
      // The first attempt decides on the instance read beside the key, if it was; a retry reads it again.
      const read = first ?? (instanceId === undefined ? undefined : getOwnedInstance(deps, instanceId, account.account_id));
      first = undefined;
      const instance = await read;
      if (!instance) throw instanceNotFound();
      const job = newJob('delete', instance);
      const recorded = await updateInstanceAtVersion(deps, instance, {
        changes: { status: 'deleting', deleted_at: deps.clock.now().toISOString() },
        job,
        account,
      });
      if (!recorded) return TRY_AGAIN;
      try {
        await deps.workflows.start('delete', job, {});
      } catch (error) {
        // The deletion is recorded; the reconciler starts the workflow for instances left deleting without one.
        logger.error('could not start the delete workflow', { error });
      }
      return { instance_id: instance.instance_id, status: 'deleting' as const, job_id: job.job_id };
    },
    {
      exhausted: () => {
        throw new Error('instance kept changing during delete');
      },
    },
  );
}

/**
 * PATCH /instances/{id}: a new name and/or labels (merged: null removes one), written at the version read so that a
 * concurrent change is never lost; the detail as it is then. Changes nothing the server runs or is billed.
 */
export function updateInstance(
  deps: Deps,
  account: Account,
  instanceId: number | undefined,
  body: UpdateInstanceBody,
): Promise<InstanceDetail> {
  return retry(
    retryPolicies.requestVersionConflict,
    async () => {
      const instance = instanceId === undefined ? undefined : await getOwnedInstance(deps, instanceId, account.account_id);
      if (!instance) throw instanceNotFound();
      const labels = body.labels === undefined ? instance.labels : patchLabels(instance.labels, body.labels);
      const refusal = labelSetRefusal(labels);
      if (refusal) throw badRequest(refusal);
      const changes = { project_name: body.project_name ?? instance.project_name, labels };
      if (!(await updateInstanceAtVersion(deps, instance, { changes }))) return TRY_AGAIN;
      const updated = { ...instance, ...changes };
      return toInstanceDetail(updated, await openInstanceSecrets(deps, updated));
    },
    {
      exhausted: () => {
        throw new Error('instance kept changing during update');
      },
    },
  );
}

/** Statuses an operator may quarantine from: a settled, live instance. */
const QUARANTINABLE: readonly InstanceStatus[] = ['active', 'stopped'];

class OperatorRefusal extends namedError('OperatorRefusal') {}

/**
 * Operators quarantine an instance (abuse): every action on it is then a 409; its owner can still delete it.
 * Only a settled instance with no action running can be quarantined, so no workflow overwrites the status.
 */
export async function quarantineInstance(deps: Deps, instanceId: number): Promise<Instance> {
  const updated = await updateInstanceWithRetry(deps, instanceId, (instance) => {
    if (instance.deleted_at !== null || instance.status === 'quarantined') return undefined;
    if (!QUARANTINABLE.includes(instance.status) || instance.active_job_id !== null) {
      throw new OperatorRefusal(
        `instance ${instanceId} is ${instance.status}${instance.active_job_id ? ' with an action running' : ''}; try again once it is active or stopped`,
      );
    }
    return { changes: { status: 'quarantined', quarantined_from: instance.status } };
  });
  if (!updated || updated.deleted_at !== null) throw new OperatorRefusal(`instance ${instanceId} does not exist`);
  return updated;
}

/** Lifts a quarantine: the instance returns to the status it had. */
export async function releaseInstance(deps: Deps, instanceId: number): Promise<Instance> {
  const updated = await updateInstanceWithRetry(deps, instanceId, (instance) =>
    instance.status === 'quarantined' && instance.deleted_at === null
      ? { changes: { status: instance.quarantined_from ?? 'stopped', quarantined_from: null } }
      : undefined,
  );
  if (!updated || updated.deleted_at !== null) throw new OperatorRefusal(`instance ${instanceId} does not exist`);
  if (updated.status === 'quarantined') throw new OperatorRefusal(`instance ${instanceId} could not be released`);
  return updated;
}
