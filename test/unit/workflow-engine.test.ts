import { executionArnOf } from '../../shared/workflows/step-functions';

describe('executionArnOf', () => {
  beforeAll(() => {
    process.env.PROVISION_STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:Provision';
    process.env.POWER_STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:Power';
    process.env.RESIZE_STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:Resize';
    process.env.DELETE_STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:Delete';
  });

  it.each([
    { type: 'provision' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Provision:job-1' },
    { type: 'power_off' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Power:job-1' },
    { type: 'reboot' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Power:job-1' },
    { type: 'resize' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Resize:job-1' },
    { type: 'delete' as const, arn: 'arn:aws:states:us-east-1:123456789012:execution:Delete:job-1' },
  ])('names the $type job’s execution after the job, on its workflow', ({ type, arn }) => {
    expect(executionArnOf({ type, job_id: 'job-1' })).toBe(arn);
  });

  it('refuses a reconcile job, which has no execution', () => {
    expect(() => executionArnOf({ type: 'reconcile', job_id: 'job-1' })).toThrow('a reconcile job has no execution');
  });
});
