import { ArnFormat, Duration, Stack, Validations } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, metricNames, type MetricName } from '../../shared/observability';
import { POWERTOOLS_SERVICE_NAME } from './api-function';

/** Every graph and alarm looks at five-minute periods. */
const PERIOD = Duration.minutes(5);
/** CloudWatch's hard limit on the metrics one alarm may read. */
const MAX_METRICS_PER_ALARM = 10;
/** Below this many requests in a period a rate says little; the LambdaErrors alarms still see those failures. */
const MIN_REQUESTS_FOR_ERROR_RATE = 50;
const MAX_5XX_PERCENT = 1;
const MAX_P99_LATENCY_MS = 2_000;
const LATENCY_PERIODS = 3;
/** From deploy accepted to instance active. */
const PROVISION_BUDGET_MS = 300_000;

export interface OperationsProps {
  /** The dashboard is named `VpsService-<stage>`, and every alarm name starts with that. */
  readonly stage: string;
  readonly httpStage: apigwv2.IHttpStage;
  /**
   * Every function of the service, grouped (the routes, each workflow's steps, the scheduled jobs): one errors and
   * one throttles alarm per group, one line per group on the dashboard.
   */
  readonly functionGroups: Readonly<Record<string, readonly lambda.IFunction[]>>;
  /** Every state machine, by the name its alarms and graph carry. */
  readonly stateMachines: Readonly<Record<string, sfn.IStateMachine>>;
  /** The meter job: its failures leave usage unbilled, so they alarm on their own. */
  readonly meter: lambda.IFunction;
}

interface AlarmSpec {
  readonly metric: cloudwatch.IMetric;
  /** The alarm fires when the metric goes above this. */
  readonly threshold: number;
  /** Consecutive periods above the threshold before it fires. @default 1 */
  readonly periods?: number;
  /** What the alarm means and what to check first. */
  readonly description: string;
}

/** One line of a graph: the sum of a metric over a group of functions. */
interface GroupSum {
  readonly name: string;
  readonly sum: cloudwatch.MathExpression;
}

/** The dashboard, the alarms and the topic they notify. */
export class Operations extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarmTopic: sns.Topic;
  readonly alarms: cloudwatch.Alarm[] = [];
  private readonly namePrefix: string;

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id);
    this.namePrefix = `VpsService-${props.stage}`;
    this.alarmTopic = this.createAlarmTopic();

    const groups = Object.entries(props.functionGroups);
    const errors = groups.flatMap(([group, functions]) => sumsOver(group, functions, (fn) => fn.metricErrors()));
    const throttles = groups.flatMap(([group, functions]) => sumsOver(group, functions, (fn) => fn.metricThrottles()));
    const api = apiMetrics(props.httpStage);
    const stateMachines = Object.entries(props.stateMachines);

    this.addApiAlarms(api);
    this.addFunctionAlarms(errors, throttles);
    this.addStateMachineAlarms(stateMachines);
    this.addServiceAlarms(props.meter);

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: this.namePrefix,
      widgets: [
        [new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 6 })],
        apiWidgets(api),
        [graph('Lambda errors', sums(errors), 12), graph('Lambda throttles', sums(throttles), 12)],
        stateMachines.map(([name, machine]) => executionsGraph(name, machine)),
        ...serviceWidgets(),
      ],
    });
  }

  /**
   * Unencrypted on purpose, with TLS enforced: CloudWatch cannot publish to a topic under the AWS-managed aws/sns
   * key, and alarm notifications carry alarm names and states only.
   */
  private createAlarmTopic(): sns.Topic {
    const topic = new sns.Topic(this, 'Alarms', { displayName: `${this.namePrefix} alarms`, enforceSSL: true });
    // The topic policy replaces the default one, so CloudWatch needs its own grant, limited to these alarms.
    const alarmArns = Stack.of(this).formatArn({
      service: 'cloudwatch',
      resource: 'alarm',
      resourceName: `${this.namePrefix}-*`,
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
    return topic;
  }

  /** Every alarm notifies the topic when it fires and when it clears. */
  private addAlarm(id: string, { metric, threshold, periods = 1, description }: AlarmSpec): void {
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmName: `${this.namePrefix}-${id}`,
      alarmDescription: description,
      metric,
      threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: periods,
      datapointsToAlarm: periods,
      // No data means no traffic, which is not a failure.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    const action = new cloudwatchActions.SnsAction(this.alarmTopic);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    this.alarms.push(alarm);
  }

  private addApiAlarms(api: ApiMetrics): void {
    this.addAlarm('Api5xxRate', {
      metric: api.serverErrorRate,
      threshold: MAX_5XX_PERCENT,
      description:
        `More than ${MAX_5XX_PERCENT}% of API requests answered 5xx in 5 minutes (counted from ` +
        `${MIN_REQUESTS_FOR_ERROR_RATE} requests on). Check first: the LambdaErrors alarms, then the API access log ` +
        "(status, routeKey, integrationError) and the failing route function's log group.",
    });
    this.addAlarm('ApiLatencyP99', {
      metric: api.latencyP99,
      threshold: MAX_P99_LATENCY_MS,
      periods: LATENCY_PERIODS,
      description:
        `API p99 latency above ${MAX_P99_LATENCY_MS} ms for ${LATENCY_PERIODS} periods of 5 minutes. Check first: ` +
        'the access log latency by routeKey, then UpstreamErrors and upstream response times (GetInstance and ' +
        'InstanceAction call the upstream API), then Lambda cold starts and throttles.',
    });
  }

  private addFunctionAlarms(errors: readonly GroupSum[], throttles: readonly GroupSum[]): void {
    for (const { name, sum } of errors) {
      this.addAlarm(`LambdaErrors-${name}`, {
        metric: sum,
        threshold: 0,
        description:
          `One or more ${name} functions failed (threw or timed out) in the last 5 minutes. Check first: ERROR lines ` +
          "in the functions' log groups, then the X-Ray traces of the failed invocations.",
      });
    }
    for (const { name, sum } of throttles) {
      this.addAlarm(`LambdaThrottles-${name}`, {
        metric: sum,
        threshold: 0,
        description:
          `Lambda refused invocations of ${name} functions for lack of concurrency in the last 5 minutes. Check ` +
          "first: the account's ConcurrentExecutions against its concurrency quota, then which function's " +
          'invocations spiked.',
      });
    }
  }

  private addStateMachineAlarms(stateMachines: readonly [string, sfn.IStateMachine][]): void {
    for (const [name, machine] of stateMachines) {
      this.addAlarm(`ExecutionsFailed-${name}`, {
        metric: machine.metricFailed({ period: PERIOD }),
        threshold: 0,
        description:
          `A ${name} execution failed: its job ended in error and its instance may be left half-way for the ` +
          "reconciler. Check first: the execution's event history (which step failed, with which error), then that " +
          "step function's log group.",
      });
      this.addAlarm(`ExecutionsTimedOut-${name}`, {
        metric: machine.metricTimedOut({ period: PERIOD }),
        threshold: 0,
        description:
          `A ${name} execution timed out. Check first: the state it was waiting in (event history), then whether ` +
          'the upstream API still answers for that server.',
      });
    }
  }

  private addServiceAlarms(meter: lambda.IFunction): void {
    this.addAlarm('ProvisionSlow', {
      metric: serviceMetric(metricNames.provisionDuration, 'p99'),
      threshold: PROVISION_BUDGET_MS,
      description:
        `Provisioning p99 (deploy accepted to instance active) above its ${PROVISION_BUDGET_MS / 60_000}-minute ` +
        "budget. Check first: UpstreamErrors and the upstream provider's status, then the provision executions' " +
        'CheckServer polling.',
    });
    this.addAlarm('MeterErrors', {
      metric: meter.metricErrors({ period: PERIOD }),
      threshold: 0,
      description:
        'The meter failed: usage is not being charged and accounts that ran out are not being billing-paused (the ' +
        "next good run charges the missed periods). Check first: ERROR lines in the meter function's log group, " +
        'then the ledger and accounts tables for throttling.',
    });
    this.addAlarm('LeakedServers', {
      metric: serviceMetric(metricNames.leakedServersDestroyed),
      threshold: 0,
      description:
        'The reconciler destroyed upstream servers that belonged to no live instance: something cost money upstream ' +
        "without an instance. Check first: the reconciler's 'destroying a leaked upstream server' log lines " +
        '(server_id, instance_id), then provision and delete executions of those instances.',
    });
  }
}

/** The sum of a metric over functions, split so that no alarm reads more metrics than CloudWatch allows. */
function sumsOver(
  group: string,
  functions: readonly lambda.IFunction[],
  metric: (fn: lambda.IFunction) => cloudwatch.IMetric,
): GroupSum[] {
  const parts = chunks(functions, MAX_METRICS_PER_ALARM);
  return parts.map((part, index) => {
    const name = parts.length === 1 ? group : `${group}${index + 1}`;
    // Ids unique across a graph that shows every group's sum.
    const ids = part.map((_, position) => `${name.charAt(0).toLowerCase()}${name.slice(1)}_${position}`);
    const sum = new cloudwatch.MathExpression({
      expression: `SUM([${ids.join(', ')}])`,
      usingMetrics: Object.fromEntries(part.map((fn, position) => [ids[position], metric(fn)])),
      label: name,
      period: PERIOD,
    });
    return { name, sum };
  });
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const count = Math.ceil(items.length / size);
  return Array.from({ length: count }, (_, index) => items.slice(index * size, (index + 1) * size));
}

const sums = (groupSums: readonly GroupSum[]) => groupSums.map(({ sum }) => sum);

interface ApiMetrics {
  readonly requests: cloudwatch.IMetric;
  readonly clientErrors: cloudwatch.IMetric;
  readonly serverErrors: cloudwatch.IMetric;
  readonly latencyP50: cloudwatch.IMetric;
  readonly latencyP99: cloudwatch.IMetric;
  /** 5xx as a percentage of requests, 0 while there are too few requests to say. */
  readonly serverErrorRate: cloudwatch.IMetric;
}

/** AWS/ApiGateway metrics of the stage (dimensions ApiId and Stage). */
function apiMetrics(stage: apigwv2.IHttpStage): ApiMetrics {
  const requests = stage.metricCount({ statistic: cloudwatch.Stats.SUM, period: PERIOD, label: 'Requests' });
  const serverErrors = stage.metricServerError({ period: PERIOD, label: '5xx' });
  return {
    requests,
    clientErrors: stage.metricClientError({ period: PERIOD, label: '4xx' }),
    serverErrors,
    latencyP50: stage.metricLatency({ statistic: cloudwatch.Stats.p(50), period: PERIOD, label: 'p50' }),
    latencyP99: stage.metricLatency({ statistic: cloudwatch.Stats.p(99), period: PERIOD, label: 'p99' }),
    serverErrorRate: new cloudwatch.MathExpression({
      expression: `IF(requests >= ${MIN_REQUESTS_FOR_ERROR_RATE}, 100 * FILL(errors, 0) / requests, 0)`,
      usingMetrics: { requests, errors: serverErrors },
      label: '5xx rate (%)',
      period: PERIOD,
    }),
  };
}

function graph(
  title: string,
  metrics: readonly cloudwatch.IMetric[],
  width: number,
  limit?: cloudwatch.HorizontalAnnotation,
): cloudwatch.GraphWidget {
  return new cloudwatch.GraphWidget({ title, left: [...metrics], leftAnnotations: limit && [limit], width });
}

function apiWidgets(api: ApiMetrics): cloudwatch.IWidget[] {
  return [
    graph('API requests', [api.requests, api.clientErrors, api.serverErrors], 8),
    graph('API latency (ms)', [api.latencyP50, api.latencyP99], 8, { value: MAX_P99_LATENCY_MS, label: 'p99 limit' }),
    graph('API 5xx rate (%)', [api.serverErrorRate], 8, { value: MAX_5XX_PERCENT, label: 'limit' }),
  ];
}

function executionsGraph(name: string, machine: sfn.IStateMachine): cloudwatch.GraphWidget {
  const options = { period: PERIOD };
  return graph(
    `${name} executions`,
    [
      machine.metricStarted({ ...options, label: 'Started' }),
      machine.metricSucceeded({ ...options, label: 'Succeeded' }),
      machine.metricFailed({ ...options, label: 'Failed' }),
      machine.metricTimedOut({ ...options, label: 'Timed out' }),
    ],
    6,
  );
}

/** One of the service's own EMF metrics (shared/observability.ts), as Powertools publishes it. */
function serviceMetric(name: MetricName, statistic: string = cloudwatch.Stats.SUM): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: POWERTOOLS_SERVICE_NAME },
    statistic,
    period: PERIOD,
  });
}

function serviceWidgets(): cloudwatch.IWidget[][] {
  const counts = (...names: MetricName[]) => names.map((name) => serviceMetric(name));
  const provisionDuration = (statistic: string) =>
    serviceMetric(metricNames.provisionDuration, statistic).with({ label: `ProvisionDuration ${statistic}` });
  return [
    [
      graph(
        'Deploys and provisioning',
        counts(metricNames.deploysAccepted, metricNames.provisionSucceeded, metricNames.provisionFailed),
        8,
      ),
      graph('Provisioning duration (ms)', [provisionDuration('p50'), provisionDuration('p99')], 8, {
        value: PROVISION_BUDGET_MS,
        label: 'budget',
      }),
      graph('Rate limits and upstream errors', counts(metricNames.rateLimited, metricNames.upstreamErrors), 8),
    ],
    [
      graph('Billing', counts(metricNames.meteredPeriods, metricNames.billingPauses), 8),
      graph('Reconciler', counts(metricNames.reconcilerRepairs, metricNames.leakedServersDestroyed), 8),
      graph(
        'Drift repaired',
        counts(metricNames.driftServerVanished, metricNames.driftPowerChanged, metricNames.driftSizeChanged, metricNames.foreignServerRefused),
        8,
      ),
    ],
  ];
}
