import { badRequest, forbidden, paymentRequired, type Failure } from './errors';
import type { Plan } from './flavors';
import type { Instance } from './instance';
import type { InstanceStatus } from './instance-status';

export const actionTypes = ['power_on', 'power_off', 'reboot', 'resize'] as const;
export type ActionType = (typeof actionTypes)[number];

/** Where each action may start from. power_off on a stopped instance is a no-op success. */
const allowedFrom: Record<ActionType, readonly InstanceStatus[]> = {
  power_on: ['stopped'],
  power_off: ['active'],
  reboot: ['active'],
  resize: ['active', 'stopped'],
};

/** What an action is judged by on the account. */
export interface ActionAccount {
  readonly billing_paused: boolean;
  /** Micro-dollars. */
  readonly balance: number;
}

/**
 * How a customer's action on their instance is answered: done already (power_off on a stopped, idle instance), refused
 * with the interface's text, in conflict with the instance's state or its running action (the edge names the action
 * in the 409, which takes a read), or accepted.
 */
export type ActionVerdict =
  | { readonly kind: 'done' }
  | { readonly kind: 'refused'; readonly failure: Failure }
  | { readonly kind: 'conflict' }
  | { readonly kind: 'accepted' };

/**
 * The checks that come after the instance was found, in the interface's order: billing pause (403; power_off stays
 * allowed), balance for power_on (402), state and the one action slot (409), then the resize rules (400).
 */
export function judgeAction(
  account: ActionAccount,
  instance: Pick<Instance, 'status' | 'active_job_id' | 'plan'>,
  type: ActionType,
  target: Plan | undefined,
): ActionVerdict {
  if (type === 'power_off' && instance.status === 'stopped' && instance.active_job_id === null) return { kind: 'done' };
  if (type !== 'power_off' && account.billing_paused) return { kind: 'refused', failure: forbidden('Instance is billing-paused') };
  if (type === 'power_on' && account.balance <= 0) return { kind: 'refused', failure: paymentRequired('Insufficient balance to power on') };
  if (instance.active_job_id !== null || !allowedFrom[type].includes(instance.status)) return { kind: 'conflict' };
  if (target) {
    if (target.flavor === instance.plan.flavor) return { kind: 'refused', failure: badRequest('Already on this flavor') };
    if ((target.disk_gb ?? 0) < (instance.plan.disk_gb ?? 0)) return { kind: 'refused', failure: badRequest('Cannot downgrade disk size') };
  }
  return { kind: 'accepted' };
}
