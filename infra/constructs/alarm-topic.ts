import { ArnFormat, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';

/** Every alarm of a stage is named `VpsService-<stage>-<name>`; the topic takes publications from those only. */
export const alarmNamePrefix = (stage: string) => `VpsService-${stage}`;

export interface AlarmTopicProps {
  readonly stage: string;
  /** An address subscribed to the topic (`-c alarmEmail=…`). */
  readonly email?: string;
}

/**
 * The topic every alarm of the stage notifies. It sits in the parent stack, so that the alarms of every nested
 * stack (the API's rollback alarms, the operations alarms) can notify it without depending on one another.
 */
export class AlarmTopic extends Construct {
  readonly topic: sns.Topic;

  /**
   * Unencrypted on purpose, with TLS enforced: CloudWatch cannot publish to a topic under the AWS-managed aws/sns
   * key, and alarm notifications carry alarm names and states only.
   */
  constructor(scope: Construct, id: string, props: AlarmTopicProps) {
    super(scope, id);
    const prefix = alarmNamePrefix(props.stage);
    const topic = (this.topic = new sns.Topic(this, 'Alarms', { displayName: `${prefix} alarms`, enforceSSL: true }));
    // The topic policy replaces the default one, so CloudWatch needs its own grant, limited to these alarms.
    const alarmArns = Stack.of(this).formatArn({
      service: 'cloudwatch',
      resource: 'alarm',
      resourceName: `${prefix}-*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: { ArnLike: { 'aws:SourceArn': alarmArns } },
      }),
    );
    Validations.of(topic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        'CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed aws/sns key, and the ' +
        'notifications hold only alarm names and states; TLS is enforced by the topic policy.',
    });
    if (props.email) topic.addSubscription(new subscriptions.EmailSubscription(props.email));
  }
}

export interface AlarmSpec {
  readonly metric: cloudwatch.IMetric;
  /** The alarm fires when the metric goes above this (below it, with `below`). */
  readonly threshold: number;
  /** Fire below the threshold instead of above it. */
  readonly below?: boolean;
  /** Consecutive periods past the threshold before it fires. @default 1 */
  readonly periods?: number;
  /** Whether a period without data counts as failing. @default false: no data means no traffic */
  readonly missingDataBreaches?: boolean;
  /** What the alarm means and what to check first. */
  readonly description: string;
}

/** An alarm named `VpsService-<stage>-<id>` that notifies the topic when it fires and when it clears. */
export function serviceAlarm(scope: Construct, id: string, stage: string, topic: sns.ITopic, spec: AlarmSpec): cloudwatch.Alarm {
  const { metric, threshold, below, periods = 1, missingDataBreaches, description } = spec;
  const alarm = new cloudwatch.Alarm(scope, id, {
    alarmName: `${alarmNamePrefix(stage)}-${id}`,
    alarmDescription: description,
    metric,
    threshold,
    comparisonOperator: below ? cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD : cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: periods,
    datapointsToAlarm: periods,
    treatMissingData: missingDataBreaches ? cloudwatch.TreatMissingData.BREACHING : cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  const action = new cloudwatchActions.SnsAction(topic);
  alarm.addAlarmAction(action);
  alarm.addOkAction(action);
  return alarm;
}
