import { Duration, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { deadLetterQueue } from './dead-letter-queue';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import { Construct } from 'constructs';
import type { ScheduleDefinition } from '../schedules';
import { ApiFunction, type ServiceContext } from './api-function';

/**
 * Scheduled work sweeps whole tables and the upstream, so its worst case grows with the fleet; it gets 5 minutes
 * (one period) and stops starting upstream calls it could not finish, leaving the rest to the next run.
 */
const SCHEDULED_TIMEOUT = Duration.minutes(5);

export interface ScheduledFunctionProps {
  readonly definition: ScheduleDefinition;
  readonly service: ServiceContext;
}

/**
 * A function invoked by EventBridge Scheduler at a fixed rate, through its `live` alias. The schedule's role may
 * invoke exactly that alias (the L2 target would also grant every version with `:*`).
 */
export class ScheduledFunction extends Construct {
  readonly function: ApiFunction;
  readonly schedule: scheduler.CfnSchedule;
  /** Runs that failed (or were skipped because the previous one still ran), kept for 14 days to look into. */
  readonly failedRuns: sqs.Queue;

  constructor(scope: Construct, id: string, { definition, service }: ScheduledFunctionProps) {
    super(scope, id);
    this.function = new ApiFunction(this, 'Function', {
      entry: definition.entry,
      access: definition.access,
      service,
      timeout: SCHEDULED_TIMEOUT,
    });
    this.failedRuns = deadLetterQueue(this, 'FailedRuns');
    // No asynchronous retries: a failed run is made up by the next one, and a retry would overlap it. A run that
    // cannot start within a period is dropped to the queue, not delayed.
    this.function.alias.configureAsyncInvoke({
      retryAttempts: 0,
      maxEventAge: Duration.seconds(Math.max(60, definition.everyMinutes * 60)),
      onFailure: new SqsDestination(this.failedRuns),
    });
    Validations.of(this.function.function).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason:
        "Invoked by EventBridge Scheduler once a period without retries: the next run redoes a failed run's work, and a " +
        'failed run alarms (Heartbeat, LambdaErrors); a dead-lettered copy of its empty event would add nothing.',
    });
    const role = new iam.Role(this, 'SchedulerRole', { assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com') });
    role.addToPolicy(new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [this.function.alias.functionArn] }));
    this.schedule = new scheduler.CfnSchedule(this, 'Schedule', {
      // The rate's unit is singular for 1 (`rate(1 minute)`): the plural is refused.
      scheduleExpression: `rate(${definition.everyMinutes} ${definition.everyMinutes === 1 ? 'minute' : 'minutes'})`,
      flexibleTimeWindow: { mode: 'OFF' },
      description: `Runs ${definition.entry} every ${definition.everyMinutes} minutes`,
      // A missed run is made up by the next one; retries would only overlap it.
      target: { arn: this.function.alias.functionArn, roleArn: role.roleArn, retryPolicy: { maximumRetryAttempts: 0 } },
    });
  }
}
