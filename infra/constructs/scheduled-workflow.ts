import * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ScheduledWorkflowDefinition } from '../schedules';
import { deadLetterQueue } from './dead-letter-queue';

export interface ScheduledWorkflowProps {
  readonly definition: ScheduledWorkflowDefinition;
  readonly stateMachine: sfn.IStateMachine;
}

/**
 * A workflow EventBridge Scheduler starts at a fixed rate: StartExecution on the state machine itself, with an empty
 * input, no function in between. The schedule's role may start exactly that state machine.
 */
export class ScheduledWorkflow extends Construct {
  readonly schedule: scheduler.CfnSchedule;
  /** Starts that failed, kept for 14 days to look into (the next period starts afresh; there are no retries). */
  readonly failedStarts: sqs.Queue;

  constructor(scope: Construct, id: string, { definition, stateMachine }: ScheduledWorkflowProps) {
    super(scope, id);
    this.failedStarts = deadLetterQueue(this, 'FailedStarts');
    const role = new iam.Role(this, 'SchedulerRole', { assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com') });
    role.addToPolicy(new iam.PolicyStatement({ actions: ['states:StartExecution'], resources: [stateMachine.stateMachineArn] }));
    this.failedStarts.grantSendMessages(role);
    this.schedule = new scheduler.CfnSchedule(this, 'Schedule', {
      scheduleExpression: `rate(${definition.everyMinutes} minutes)`,
      flexibleTimeWindow: { mode: 'OFF' },
      description: `Starts the ${definition.workflow} workflow every ${definition.everyMinutes} minutes`,
      target: {
        arn: stateMachine.stateMachineArn,
        roleArn: role.roleArn,
        input: '{}',
        // A missed run is made up by the next one; a retried start would only overlap it.
        retryPolicy: { maximumRetryAttempts: 0 },
        deadLetterConfig: { arn: this.failedStarts.queueArn },
      },
    });
  }
}
