import { describe, expect, it } from 'vitest';
import { judgeAction, type ActionAccount, type ActionType } from '../../shared/model/actions';
import { orderablePlan, type Plan } from '../../shared/model/flavors';
import { instanceSchema, type Instance } from '../../shared/model/instance';
import { storedActiveInstance } from '../fixtures/stored-items';

const active = instanceSchema.parse(storedActiveInstance);
const stopped: Instance = { ...active, status: 'stopped', paused_by: 'user' };
const busy: Instance = { ...active, active_job_id: 'job-reboot' };
const funded: ActionAccount = { billing_paused: false, balance: 5_000_000 };
const paused: ActionAccount = { billing_paused: true, balance: 0 };
const broke: ActionAccount = { billing_paused: false, balance: 0 };
const larger = orderablePlan('s-2vcpu-4gb');
const smallerDisk = orderablePlan('s-2vcpu-2gb');
const sameFlavor = orderablePlan('s-1vcpu-2gb');

const verdictOf = (account: ActionAccount, instance: Instance, type: ActionType, target?: Plan) => {
  const verdict = judgeAction(account, instance, type, target);
  return verdict.kind === 'refused' ? { kind: verdict.kind, status: verdict.failure.kind, text: verdict.failure.message } : verdict;
};

describe('judgeAction, in the order of the checks', () => {
  it.each<[string, ActionAccount, Instance, ActionType, Plan | undefined, object]>([
    ['power_off on a stopped, idle instance is done already', paused, stopped, 'power_off', undefined, { kind: 'done' }],
    [
      'a billing pause refuses power_on before the balance',
      paused,
      stopped,
      'power_on',
      undefined,
      { kind: 'refused', status: 'forbidden', text: 'Instance is billing-paused' },
    ],
    [
      'a billing pause refuses reboot before the state',
      paused,
      busy,
      'reboot',
      undefined,
      { kind: 'refused', status: 'forbidden', text: 'Instance is billing-paused' },
    ],
    [
      'a billing pause refuses resize before its rules',
      paused,
      active,
      'resize',
      sameFlavor,
      { kind: 'refused', status: 'forbidden', text: 'Instance is billing-paused' },
    ],
    ['a billing pause leaves power_off allowed', paused, active, 'power_off', undefined, { kind: 'accepted' }],
    [
      'no balance refuses power_on before the state',
      broke,
      active,
      'power_on',
      undefined,
      { kind: 'refused', status: 'payment_required', text: 'Insufficient balance to power on' },
    ],
    ['no balance leaves reboot allowed', broke, active, 'reboot', undefined, { kind: 'accepted' }],
    ['power_on on a running instance conflicts', funded, active, 'power_on', undefined, { kind: 'conflict' }],
    ['an action while another runs conflicts', funded, busy, 'power_off', undefined, { kind: 'conflict' }],
    ['a resize while another action runs conflicts before its rules', funded, busy, 'resize', sameFlavor, { kind: 'conflict' }],
    [
      'a resize to the same flavor is refused',
      funded,
      active,
      'resize',
      sameFlavor,
      { kind: 'refused', status: 'invalid_request', text: 'Already on this flavor' },
    ],
    [
      'a resize to a smaller disk is refused',
      funded,
      { ...active, plan: larger },
      'resize',
      smallerDisk,
      { kind: 'refused', status: 'invalid_request', text: 'Cannot downgrade disk size' },
    ],
    ['a resize of a stopped instance to a larger plan is accepted', funded, stopped, 'resize', larger, { kind: 'accepted' }],
    ['reboot of a running instance is accepted', funded, active, 'reboot', undefined, { kind: 'accepted' }],
  ])('%s', (_, account, instance, type, target, expected) => {
    expect(verdictOf(account, instance, type, target)).toEqual(expected);
  });
});
