import { Match, type Template } from 'aws-cdk-lib/assertions';
import type { ServiceStack } from '../../infra/stack';
import { logicalId, synthesize } from './synth';

describe('scheduled jobs', () => {
  let stack: ServiceStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
  });

  it('invokes the reconciler without asynchronous retries, sending a failed run to its queue', () => {
    const queue = logicalId(stack.scheduled.reconciler.failedRuns as never);

    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalId(stack.scheduled.reconciler.function.function as never) },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 300,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      Qualifier: Match.anyValue(),
    });
  });

  it('invokes the account reviews every minute (the singular unit EventBridge Scheduler takes), without retries', () => {
    const reviews = stack.scheduled.reviews;
    const schedule = template.toJSON().Resources[logicalId(reviews.schedule as never)].Properties;
    expect(schedule).toMatchObject({ ScheduleExpression: 'rate(1 minute)', Target: { RetryPolicy: { MaximumRetryAttempts: 0 } } });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalId(reviews.function.function as never) },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
      Qualifier: Match.anyValue(),
    });
  });

  it('has no state machine started by a schedule: billing follows events, not a periodic meter', () => {
    const targets = Object.values(template.findResources('AWS::Scheduler::Schedule')).map((schedule) =>
      JSON.stringify(schedule.Properties.Target.Arn),
    );
    expect(targets.length).toBe(3);
    expect(targets.filter((arn) => arn.includes('StateMachine'))).toEqual([]);
  });
});
