import { Match, type Template } from 'aws-cdk-lib/assertions';
import type { ServiceStack } from '../../infra/stack';
import { logicalId, synthesize } from './synth';

describe('scheduled jobs', () => {
  let stack: ServiceStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
  });

  const functionOf = (name: 'meter' | 'reconciler') =>
    template.findResources('AWS::Lambda::Function')[logicalId(stack.scheduled[name].function.function as never)]!;

  it('never runs the meter twice at once: reserved concurrency 1', () => {
    expect(functionOf('meter').Properties.ReservedConcurrentExecutions).toBe(1);
    expect(functionOf('reconciler').Properties.ReservedConcurrentExecutions).toBeUndefined();
  });

  it.each(['meter', 'reconciler'] as const)('invokes the %s without asynchronous retries, sending a failed run to its queue', (name) => {
    const queue = logicalId(stack.scheduled[name].failedRuns as never);

    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalId(stack.scheduled[name].function.function as never) },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 300,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      Qualifier: Match.anyValue(),
    });
  });
});
