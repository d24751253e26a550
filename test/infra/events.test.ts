import { Match, type Template } from 'aws-cdk-lib/assertions';
import type { ServiceStack } from '../../infra/stack';
import { logicalId, synthesize, type Resource } from './synth';

describe('ServiceEvents', () => {
  let stack: ServiceStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
  });

  it('streams old and new images of exactly the instances, jobs, webhooks and accounts tables', () => {
    const tables = template.findResources('AWS::DynamoDB::GlobalTable') as Record<string, Resource>;
    const streamed = Object.entries(tables)
      .filter(([, table]) => table.Properties.StreamSpecification)
      .map(([id, table]) => [id, table.Properties.StreamSpecification.StreamViewType]);
    expect(streamed.sort()).toEqual(
      [stack.tables.instances, stack.tables.jobs, stack.tables.webhooks, stack.tables.accounts]
        .map((table) => [logicalId(table), 'NEW_AND_OLD_IMAGES'])
        .sort(),
    );
  });

  it('feeds every stream to the stream function, from the oldest record, bisecting and dead-lettering failed batches', () => {
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as Resource[];
    const fromStreams = mappings.filter((mapping) => mapping.Properties.StartingPosition === 'TRIM_HORIZON');
    expect(fromStreams).toHaveLength(4);
    for (const mapping of fromStreams) {
      expect(mapping.Properties).toMatchObject({
        FunctionName: { Ref: logicalId(stack.events.functions.publishChanges.function) },
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 10,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(stack.events.eventDeadLetters), 'Arn'] } } },
      });
    }
  });

  it('publishes to the custom bus vps-<stage>, which routes every service event to the fan-out', () => {
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'vps-dev' });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: { Ref: logicalId(stack.events.bus) },
      EventPattern: { source: ['vps.service'] },
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalId(stack.events.functions.fanOut.function), 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 8, MaximumEventAgeInSeconds: 86_400 },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalId(stack.events.eventDeadLetters), 'Arn'] } },
        }),
      ],
    });
    const publisher = template.findResources('AWS::Lambda::Function')[logicalId(stack.events.functions.publishChanges.function)];
    expect(publisher?.Properties.Environment.Variables.EVENT_BUS_NAME).toEqual({ Ref: logicalId(stack.events.bus) });
  });

  it('queues deliveries on an encrypted, TLS-only queue that dead-letters after 5 receives, read in batches with partial failures', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(stack.events.deliveryDeadLetters), 'Arn'] }, maxReceiveCount: 5 },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(stack.events.functions.deliverWebhooks.function) },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('never lets a deployed function accept http or loopback receivers', () => {
    for (const fn of Object.values(template.findResources('AWS::Lambda::Function')) as Resource[]) {
      expect(fn.Properties.Environment?.Variables ?? {}).not.toHaveProperty('WEBHOOK_ALLOW_LOOPBACK');
    }
  });

  it.each(['WebhookDeliveryFailures', 'DeliveryDeadLetters', 'EventDeadLetters', 'StreamLag'])(
    'alarms on %s, notifying the alarm topic',
    (name) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: `VpsService-dev-${name}`,
        AlarmActions: [{ Ref: logicalId(stack.operations.alarmTopic) }],
      });
    },
  );

  it('graphs deliveries, dead letters and stream lag on the service dashboard', () => {
    const body = JSON.stringify(template.findResources('AWS::CloudWatch::Dashboard'));
    for (const title of ['Webhook deliveries', 'Dead letters', 'Stream lag (ms)']) expect(body).toContain(title);
  });
});
