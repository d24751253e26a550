import { unitDeps } from '../support/unit-deps';
import { executionArnOf } from '../../shared/workflows/step-functions';

describe('executionArnOf', () => {
  const deps = unitDeps({
    PROVISION_STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:Provision',
    POWER_STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:Power',
    RESIZE_STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:Resize',
    DELETE_STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:Delete',
  });

  it.each([
    { type: 'provision' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Provision:job-1' },
    { type: 'power_off' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Power:job-1' },
    { type: 'reboot' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Power:job-1' },
    { type: 'resize' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Resize:job-1' },
    { type: 'delete' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Delete:job-1' },
  ])('names the $type job’s execution after the job, on its workflow', ({ type, arn }) => {
    expect(executionArnOf(deps, { type, job_id: 'job-1' })).toBe(arn);
  });

  it('refuses a reconcile job, which has no execution', () => {
    expect(() => executionArnOf(deps, { type: 'reconcile', job_id: 'job-1' })).toThrow('a reconcile job has no execution');
  });
});
