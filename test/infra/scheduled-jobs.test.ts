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

  it('starts the meter state machine itself every 5 minutes, without retries, a failed start kept in its queue', () => {
    const meter = stack.scheduledWorkflows.meter;
    const schedule = template.toJSON().Resources[logicalId(meter.schedule as never)].Properties;
    const role = logicalId(meter.node.findChild('SchedulerRole') as never);
    expect(schedule).toMatchObject({
      ScheduleExpression: 'rate(5 minutes)',
      Target: {
        Arn: { Ref: logicalId(stack.workflows.meter.stateMachine as never) },
        RoleArn: { 'Fn::GetAtt': [role, 'Arn'] },
        Input: '{}',
        RetryPolicy: { MaximumRetryAttempts: 0 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalId(meter.failedStarts as never), 'Arn'] } },
      },
    });
    // The schedule's role starts exactly that state machine, and may put a failed start in its queue; nothing else.
    const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((policy) =>
      JSON.stringify(policy.Properties.Roles).includes(role),
    );
    const statements = policies.flatMap(
      (policy) => policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[],
    );
    expect(statements.find((statement) => statement.Action === 'states:StartExecution')?.Resource).toEqual({
      Ref: logicalId(stack.workflows.meter.stateMachine as never),
    });
    const actions = statements.flatMap((statement) => [statement.Action].flat()).sort();
    expect(actions.filter((action) => !action.startsWith('sqs:'))).toEqual(['states:StartExecution']);
  });

  it('lets the meter state machine invoke its shard worker and nothing else, one shard per Map iteration', () => {
    const role = logicalId(stack.workflows.meter.stateMachine.role as never);
    const invokes = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(role))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[])
      .filter((statement) => [statement.Action].flat().some((action) => action.startsWith('lambda:')));
    expect(invokes).toHaveLength(1);
    expect(invokes[0]!.Action).toBe('lambda:InvokeFunction');
    expect(invokes[0]!.Resource).toEqual({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack.workflows.meter.steps.MeterShardFunctionArn!.function as never), 'Arn'] }, ':*']],
    });
  });
});
