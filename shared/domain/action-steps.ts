import { config } from '../config';
import { namedError } from './errors';
import { countMetric, logger, metricNames } from '../observability';
import { getInstanceItem, updateInstanceWithRetry, type InstanceChanges, type InstanceItem } from '../store/instances';
import { finishJob } from '../store/jobs';
import type { ActionType, InstanceStatus } from '../schemas/instances';
import { upstream } from '../upstream';
import type { UpstreamServer } from '../upstream/driver';
import type { CapacityPool } from '../store/counters';

export interface ActionStepInput {
  readonly instance_id: number;
  readonly job_id: string;
}

/** The upstream reported the action as errored. */
export class UpstreamActionFailedError extends namedError('UpstreamActionFailedError') {}

/** The upstream action did not complete within the budget. */
export class ActionTimeoutError extends namedError('ActionTimeoutError') {}

function serverIdOf(instance: InstanceItem | undefined): number {
  if (instance?.upstream_id == null) throw new Error('the instance has no upstream server');
  return instance.upstream_id;
}

/** Starts the resize itself (to the plan reserved at acceptance), or the power-on that follows it. */
export async function startActionStep(input: ActionStepInput & { type: 'resize' | 'power_on' }): Promise<{ action_id: number }> {
  const instance = await getInstanceItem(input.instance_id);
  const serverId = serverIdOf(instance);
  const target = instance?.pending_plan;
  if (input.type === 'resize' && !target) throw new Error('no resize target is reserved');
  const request = input.type === 'resize' ? { type: 'resize' as const, size: target?.flavor ?? '', disk: true as const } : { type: 'power_on' as const };
  const action = await (await upstream()).startAction(serverId, request);
  return { action_id: action.id };
}

export async function checkActionStep(input: ActionStepInput & { action_id: number; started_at: string }): Promise<{ done: boolean }> {
  const action = await (await upstream()).getAction(input.action_id);
  if (action.status === 'completed') return { done: true };
  if (action.status === 'errored') throw new UpstreamActionFailedError(`upstream action ${action.id} (${action.type}) errored`);
  const elapsedSeconds = (Date.now() - Date.parse(input.started_at)) / 1000;
  if (elapsedSeconds > config().actionTimeoutSeconds) throw new ActionTimeoutError(`action not complete after ${Math.round(elapsedSeconds)} s`);
  return { done: false };
}

function poweredState(type: Exclude<ActionType, 'resize'>, pausedBy: 'user' | 'billing'): InstanceChanges {
  if (type === 'power_off') return { status: 'stopped', paused_by: pausedBy };
  return type === 'power_on' ? { status: 'active', paused_by: null } : { status: 'active' };
}

/** Records the completed power action and frees the instance's action slot. */
export async function finishPowerStep(
  input: ActionStepInput & { type: Exclude<ActionType, 'resize'>; paused_by: 'user' | 'billing' },
): Promise<void> {
  await updateInstanceWithRetry(input.instance_id, (instance) =>
    instance.active_job_id === input.job_id && instance.deleted_at === null
      ? { changes: { ...poweredState(input.type, input.paused_by), active_job_id: null } }
      : undefined,
  );
  await finishJob(input.job_id, { status: 'succeeded' }, new Date().toISOString());
}

/** Swaps plan and capacity at the end of a resize: the new tier was held since acceptance; the old one goes back. */
export async function finishResizeStep(input: ActionStepInput & { previous_status: InstanceStatus }): Promise<void> {
  await updateInstanceWithRetry(input.instance_id, (instance) =>
    instance.active_job_id === input.job_id && instance.pending_plan && instance.deleted_at === null
      ? {
          changes: { plan: instance.pending_plan, pending_plan: null, status: input.previous_status, active_job_id: null },
          release: [{ kind: 'tier', flavor: instance.plan.flavor }],
        }
      : undefined,
  );
  await finishJob(input.job_id, { status: 'succeeded' }, new Date().toISOString());
}

const failureTexts: Record<string, string> = {
  UpstreamActionFailedError: 'The upstream action failed',
  ActionTimeoutError: 'The upstream action did not complete in time',
  UpstreamPermanentError: 'The upstream refused the action',
  UpstreamTransientError: 'The upstream kept failing',
};

/**
 * What the instance record should say, given what the upstream reports: its power state, and for an interrupted
 * resize whether the server did end up on the new size (plan and tiers swap) or not (the reserved tier goes back).
 */
export function settledChanges(instance: InstanceItem, server: UpstreamServer | null): { changes: InstanceChanges; release: CapacityPool[] } {
  const running = server?.status === 'active';
  const changes: InstanceChanges = {
    status: running ? 'active' : 'stopped',
    paused_by: running ? null : (instance.paused_by ?? 'user'),
    active_job_id: null,
    pending_plan: null,
  };
  const pending = instance.pending_plan;
  if (!pending) return { changes, release: [] };
  if (server?.sizeSlug === pending.flavor) {
    return { changes: { ...changes, plan: pending }, release: [{ kind: 'tier', flavor: instance.plan.flavor }] };
  }
  return { changes, release: [{ kind: 'tier', flavor: pending.flavor }] };
}

/**
 * Settles an action that failed or was abandoned: the instance takes the state the upstream reports, its action
 * slot is freed, capacity follows the plan it really has, and the job fails with a text safe to show.
 */
export async function settleAction(instanceId: number, jobId: string, errorName: string | undefined): Promise<void> {
  const instance = await getInstanceItem(instanceId);
  if (instance && instance.active_job_id === jobId && instance.deleted_at === null) {
    const server = instance.upstream_id === null ? null : await (await upstream()).getServer(instance.upstream_id);
    await updateInstanceWithRetry(instanceId, (current) =>
      current.active_job_id === jobId && current.deleted_at === null ? settledChanges(current, server) : undefined,
    );
    logger.warn('action failed; settled to the upstream state', { cause: errorName, upstream_status: server?.status });
    if (errorName?.startsWith('Upstream')) countMetric(metricNames.upstreamErrors);
  }
  await finishJob(jobId, { status: 'failed', error: failureTexts[errorName ?? ''] ?? 'Upstream error' }, new Date().toISOString());
}

export async function failActionStep(input: ActionStepInput & { error?: { Error?: string } }): Promise<void> {
  await settleAction(input.instance_id, input.job_id, input.error?.Error);
}
