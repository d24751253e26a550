import { Duration, Validations, type RemovalPolicy } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { deadLetterQueue } from './dead-letter-queue';
import { Construct } from 'constructs';
import { EVENT_SOURCE } from '../../shared/events/source';
import { METRICS_NAMESPACE, metricNames } from '../../shared/metric-names';
import { eventFunctions, type EventFunctionName } from '../event-functions';
import { streamMapping } from '../stream-mapping';
import { tables as tableDefinitions, type TableName } from '../../shared/tables';
import { serviceAlarm } from './alarm-topic';
import { ApiFunction, POWERTOOLS_SERVICE_NAME, type ServiceContext } from './api-function';

const PERIOD = Duration.minutes(5);
/** One attempt waits at most 10 s for the receiver; the rest is DynamoDB and opening the secret. */
const DELIVERY_TIMEOUT = Duration.seconds(30);
/** A message whose handling failed this often (our own faults, not the receiver's) is dead-lettered. */
const MAX_RECEIVES = 5;
/** The mail sender's own limit: a few DynamoDB calls and one SES call per message. */
const MAIL_TIMEOUT = Duration.seconds(30);
/** Stream records older than this are behind: customers notice a minute. */
const MAX_STREAM_LAG_MS = 60_000;
/** Failed attempts per 5 minutes that deserve a look (receivers fail on their own; a surge means us). */
const MAX_DELIVERY_FAILURES = 100;

export interface ServiceEventsProps {
  /** The bus is `vps-<stage>`. */
  readonly stage: string;
  readonly service: ServiceContext;
  /** The tables whose streams events are derived from. */
  readonly sources: Readonly<Partial<Record<TableName, dynamodb.ITableV2>>>;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * Events and webhooks: table streams → the stream function → the `vps-<stage>` bus → a rule to the fan-out →
 * the delivery queue (with its dead-letter queue) → the deliverer. And the console's mail: the sign-up and
 * forgot-password routes → the mail queue (with its dead-letter queue) → the mail sender.
 */
export class ServiceEvents extends Construct {
  readonly bus: events.EventBus;
  readonly deliveryQueue: sqs.Queue;
  readonly deliveryDeadLetters: sqs.Queue;
  readonly authMailQueue: sqs.Queue;
  readonly authMailDeadLetters: sqs.Queue;
  /** Stream batches that could not be published, and bus events the fan-out could not take. */
  readonly eventDeadLetters: sqs.Queue;
  readonly functions: Readonly<Record<EventFunctionName, ApiFunction>>;

  constructor(scope: Construct, id: string, props: ServiceEventsProps) {
    super(scope, id);
    this.bus = new events.EventBus(this, 'Bus', { eventBusName: `vps-${props.stage}` });
    this.eventDeadLetters = deadLetterQueue(this, 'EventDeadLetters');
    this.deliveryDeadLetters = deadLetterQueue(this, 'DeliveryDeadLetters');
    this.deliveryQueue = new sqs.Queue(this, 'DeliveryQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: DELIVERY_TIMEOUT.plus(DELIVERY_TIMEOUT),
      deadLetterQueue: { queue: this.deliveryDeadLetters, maxReceiveCount: MAX_RECEIVES },
    });

    this.authMailDeadLetters = deadLetterQueue(this, 'AuthMailDeadLetters');
    this.authMailQueue = new sqs.Queue(this, 'AuthMailQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: MAIL_TIMEOUT.plus(MAIL_TIMEOUT),
      // A link that arrives a day late is worth nothing: its owner has asked again by then.
      retentionPeriod: Duration.hours(1),
      deadLetterQueue: { queue: this.authMailDeadLetters, maxReceiveCount: MAX_RECEIVES },
    });

    const service: ServiceContext = {
      ...props.service,
      webhookQueue: this.deliveryQueue,
      eventBus: this.bus,
      authMailQueue: this.authMailQueue,
    };
    const make = (name: EventFunctionName, timeout: Duration, deadLetterQueue?: sqs.IQueue) =>
      new ApiFunction(this, name.charAt(0).toUpperCase() + name.slice(1), { ...eventFunctions[name], service, timeout, deadLetterQueue });
    this.functions = {
      publishChanges: make('publishChanges', Duration.minutes(1)),
      // Invoked asynchronously by the bus: an event it failed on every attempt joins the bus's undeliverable ones.
      fanOut: make('fanOut', Duration.seconds(30), this.eventDeadLetters),
      deliverWebhooks: make('deliverWebhooks', DELIVERY_TIMEOUT),
      sendAuthMail: make('sendAuthMail', MAIL_TIMEOUT),
    };
    for (const [fn, queue] of [
      [this.functions.deliverWebhooks, 'delivery'],
      [this.functions.sendAuthMail, 'mail'],
    ] as const) {
      Validations.of(fn.function).acknowledge(
        {
          id: 'Serverless-LambdaDLQ',
          reason: `Invoked by the ${queue} queue's event source mapping: a failed message returns to the queue, whose redrive policy dead-letters it.`,
        },
        {
          id: 'Serverless-LambdaEventSourceMappingDestination',
          reason: `An SQS event source mapping takes no on-failure destination; the ${queue} queue's redrive policy dead-letters a message after 5 failed receives.`,
        },
      );
    }
    Validations.of(this.functions.publishChanges.function).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason:
        "Invoked by the tables' stream event source mappings, whose on-failure destination (the event dead-letter queue) keeps failed batches.",
    });

    for (const [name, table] of Object.entries(props.sources) as [TableName, dynamodb.ITableV2][]) {
      // The stream function tells the tables apart by name; it reads their streams, never their items.
      this.functions.publishChanges.function.addEnvironment(tableDefinitions[name].envVar, table.tableName);
      this.functions.publishChanges.function.addEventSource(
        new DynamoEventSource(table, {
          startingPosition: lambda.StartingPosition.TRIM_HORIZON,
          ...streamMapping,
          onFailure: new SqsDlq(this.eventDeadLetters),
        }),
      );
    }
    new events.Rule(this, 'FanOutRule', {
      eventBus: this.bus,
      eventPattern: { source: [EVENT_SOURCE] },
      targets: [
        new targets.LambdaFunction(this.functions.fanOut.function, {
          deadLetterQueue: this.eventDeadLetters,
          retryAttempts: 8,
          maxEventAge: Duration.hours(24),
        }),
      ],
    });
    this.functions.deliverWebhooks.function.addEventSource(
      new SqsEventSource(this.deliveryQueue, { batchSize: 10, reportBatchItemFailures: true, maxConcurrency: 10 }),
    );
    this.functions.sendAuthMail.function.addEventSource(
      new SqsEventSource(this.authMailQueue, { batchSize: 10, reportBatchItemFailures: true, maxConcurrency: 5 }),
    );
  }

  /**
   * Alarms (on the service's alarm topic) and a dashboard row: delivery failures, dead letters, stream lag. The
   * alarms are made in `scope`, the operations construct with the service's other alarms.
   */
  addOperations(scope: Construct, stage: string, dashboard: cloudwatch.Dashboard, topic: sns.ITopic): cloudwatch.Alarm[] {
    const failures = serviceMetric(metricNames.webhookDeliveryFailures);
    const deliveries = serviceMetric(metricNames.webhookDeliveries);
    const disabled = serviceMetric(metricNames.webhooksDisabled);
    const deadLetters = (queue: sqs.Queue) => queue.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: 'Maximum' });
    const streamLag = this.functions.publishChanges.function.metric('IteratorAge', { period: PERIOD, statistic: 'Maximum' });
    const specs: [string, cloudwatch.IMetric, number, number, string][] = [
      [
        'WebhookDeliveryFailures',
        failures,
        MAX_DELIVERY_FAILURES,
        1,
        'Many webhook attempts failed in 5 minutes. Check first: the deliverer log group (error per attempt), then whether one account or all are affected (DNS, egress).',
      ],
      [
        'DeliveryDeadLetters',
        deadLetters(this.deliveryDeadLetters),
        0,
        1,
        'Webhook deliveries failed on our side 5 times and were dead-lettered. Check first: ERROR lines of the deliverer (DynamoDB, KMS), then redrive the queue.',
      ],
      [
        'AuthMailDeadLetters',
        deadLetters(this.authMailDeadLetters),
        0,
        1,
        "Console e-mails (confirmation and reset links) failed 5 times and were dead-lettered: people are not getting their links. Check first: ERROR lines of the mail sender (SES sending limits, the From identity), then redrive the queue within the message's hour.",
      ],
      [
        'EventDeadLetters',
        deadLetters(this.eventDeadLetters),
        0,
        1,
        'Stream batches or bus events could not be handled and were dead-lettered. Check first: ERROR lines of the stream and fan-out functions, then EventBridge PutEvents failures.',
      ],
      [
        'StreamLag',
        streamLag,
        MAX_STREAM_LAG_MS,
        3,
        'Events are published more than a minute after their change. Check first: errors and throttles of the stream function, then its batch retries.',
      ],
    ];
    const alarms = specs.map(([name, metric, threshold, periods, description]) =>
      serviceAlarm(scope, name, stage, topic, { metric, threshold, periods, description }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: 'Webhook deliveries', left: [deliveries, failures, disabled], width: 8 }),
      new cloudwatch.GraphWidget({
        title: 'Dead letters',
        left: [deadLetters(this.deliveryDeadLetters), deadLetters(this.eventDeadLetters), deadLetters(this.authMailDeadLetters)],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Stream lag (ms)',
        left: [streamLag],
        leftAnnotations: [{ value: MAX_STREAM_LAG_MS, label: 'alarm' }],
        width: 8,
      }),
    );
    return alarms;
  }
}

function serviceMetric(name: string): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: POWERTOOLS_SERVICE_NAME },
    statistic: 'Sum',
    period: PERIOD,
  });
}
