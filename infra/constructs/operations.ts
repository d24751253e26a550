import { Duration } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, metricNames, type MetricName } from '../../shared/metric-names';
import { alarmNamePrefix, serviceAlarm, type AlarmSpec } from './alarm-topic';
import { POWERTOOLS_SERVICE_NAME } from './api-function';

/** Every graph and alarm looks at five-minute periods. */
const PERIOD = Duration.minutes(5);
/** Counted from the API access log by a metric filter: every 429, the gateway's and the functions'. */
const API_429_METRIC = 'Api429';
/** CloudWatch's hard limit on the metrics one alarm may read. */
const MAX_METRICS_PER_ALARM = 10;
/** Below this many requests in a period a rate says little; the LambdaErrors alarms still see those failures. */
const MIN_REQUESTS_FOR_ERROR_RATE = 50;
const MAX_5XX_PERCENT = 1;
const MAX_P99_LATENCY_MS = 2_000;
const LATENCY_PERIODS = 3;
/** From deploy accepted to instance active. */
const PROVISION_BUDGET_MS = 300_000;
/** Clients poll and sometimes ask for what is gone; a quarter of all answers being 4xx is no longer that. */
const MAX_4XX_PERCENT = 25;
/** Refusals by the gateway's throttle or an account's limits, as a share of requests. */
const MAX_429_PERCENT = 5;
/** A function whose slowest run in a period used this share of its timeout is one bad day from timing out. */
const MAX_DURATION_PERCENT_OF_TIMEOUT = 80;
/** 429s from the upstream are retried; this many in 5 minutes means our upstream rate limit is being spent. */
const MAX_UPSTREAM_THROTTLED = 20;
/** The reconciler repairs the odd instance a crash left half-way; more than this in one period is a pattern. */
const MAX_RECONCILER_REPAIRS = 10;
/** A scheduled job alarms when it has not once succeeded in this many of its periods. */
const HEARTBEAT_PERIODS = 3;
/** The DynamoDB operations the service uses, whose system errors alarm. */
const DYNAMODB_OPERATIONS = [
  dynamodb.Operation.GET_ITEM,
  dynamodb.Operation.PUT_ITEM,
  dynamodb.Operation.UPDATE_ITEM,
  dynamodb.Operation.DELETE_ITEM,
  dynamodb.Operation.QUERY,
  dynamodb.Operation.SCAN,
  dynamodb.Operation.TRANSACT_WRITE_ITEMS,
  dynamodb.Operation.BATCH_WRITE_ITEM,
];

export interface OperationsProps {
  /** The dashboard is named `VpsService-<stage>`, and every alarm name starts with that. */
  readonly stage: string;
  readonly httpStage: apigwv2.IHttpStage;
  /**
   * Every function of the service, grouped (the routes, each workflow's steps, the scheduled jobs): one errors and
   * one throttles alarm per group, one line per group on the dashboard.
   */
  readonly functionGroups: Readonly<Record<string, readonly lambda.Function[]>>;
  /** Every state machine, by the name its alarms and graph carry. */
  readonly stateMachines: Readonly<Record<string, sfn.IStateMachine>>;
  /** Every scheduled job, by name, with what it runs and its rate: each has a heartbeat. */
  readonly scheduledJobs: Readonly<Record<string, ScheduledJob>>;
  /** Every table, by name: throttles and system errors alarm. */
  readonly tables: Readonly<Record<string, dynamodb.ITableV2>>;
  /** The API's JSON access log, from which 429 answers are counted. */
  readonly accessLogs: logs.ILogGroup;
  /** The topic every alarm notifies. */
  readonly alarmTopic: sns.ITopic;
  /** Alarms made elsewhere (the API's rollback alarms, beside the deployments they roll back): on the dashboard too. */
  readonly otherAlarms?: readonly cloudwatch.Alarm[];
  /** The MCP server's function (also a group of its own in `functionGroups`): a dashboard row of its own. */
  readonly mcpFunction?: lambda.Function;
}

/** A scheduled job: a function the schedule invokes, or a state machine it starts. */
export interface ScheduledJob {
  readonly function: lambda.IFunction;
  readonly everyMinutes: number;
}

/** One line of a graph: the sum of a metric over a group of functions. */
interface GroupSum {
  readonly name: string;
  readonly sum: cloudwatch.MathExpression;
}

/** The dashboard and the alarms, notifying the stage's alarm topic. */
export class Operations extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarmTopic: sns.ITopic;
  /** Every alarm of the service, those made elsewhere included: the dashboard's alarm widget shows them all. */
  readonly alarms: cloudwatch.Alarm[] = [];
  private readonly stage: string;

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id);
    this.stage = props.stage;
    this.alarmTopic = props.alarmTopic;
    this.alarms.push(...(props.otherAlarms ?? []));

    const groups = Object.entries(props.functionGroups);
    const errors = groups.flatMap(([group, functions]) => sumsOver(group, functions, (fn) => fn.metricErrors()));
    const throttles = groups.flatMap(([group, functions]) => sumsOver(group, functions, (fn) => fn.metricThrottles()));
    const api = apiMetrics(props.httpStage);
    const stateMachines = Object.entries(props.stateMachines);

    const api429Rate = this.api429Rate(props.accessLogs, api.requests);
    const durations = groups.flatMap(([group, functions]) => durationShares(group, functions));
    const dropped = groups.flatMap(([group, functions]) =>
      sumsOver(group, functions, (fn) => fn.metric('AsyncEventsDropped', { statistic: cloudwatch.Stats.SUM })),
    );

    this.addApiAlarms(api, api429Rate);
    this.addFunctionAlarms(errors, throttles);
    this.addDeadlineAlarms(durations);
    this.addAsyncAlarms(dropped);
    this.addStateMachineAlarms(stateMachines);
    this.addScheduledJobAlarms(props.scheduledJobs);
    this.addTableAlarms(props.tables);
    this.addServiceAlarms();

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: alarmNamePrefix(props.stage),
      widgets: [
        [new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 6 })],
        apiWidgets(api, api429Rate),
        [graph('Lambda errors', sums(errors), 12), graph('Lambda throttles', sums(throttles), 12)],
        [
          graph('Slowest run, % of timeout', sums(durations), 12, {
            value: MAX_DURATION_PERCENT_OF_TIMEOUT,
            label: 'limit',
          }),
          graph('Async events dropped', sums(dropped), 12),
        ],
        // Four to a row.
        ...Array.from({ length: Math.ceil(stateMachines.length / 4) }, (_, row) =>
          stateMachines.slice(row * 4, row * 4 + 4).map(([name, machine]) => executionsGraph(name, machine)),
        ),
        ...serviceWidgets(),
        ...(props.mcpFunction ? [mcpWidgets(props.mcpFunction)] : []),
      ],
    });
  }

  /** An alarm of the service, on the dashboard's alarm widget. */
  private addAlarm(id: string, spec: AlarmSpec): cloudwatch.Alarm {
    const alarm = serviceAlarm(this, id, this.stage, this.alarmTopic, spec);
    this.alarms.push(alarm);
    return alarm;
  }

  /** 429 answers, from the gateway's throttle and the functions' limits alike, as a share of requests. */
  private api429Rate(accessLogs: logs.ILogGroup, requests: cloudwatch.IMetric): cloudwatch.IMetric {
    const filter = new logs.MetricFilter(this, 'Api429Filter', {
      logGroup: accessLogs,
      filterPattern: logs.FilterPattern.stringValue('$.status', '=', '429'),
      metricNamespace: METRICS_NAMESPACE,
      metricName: API_429_METRIC,
      metricValue: '1',
    });
    const refused = filter.metric({ statistic: cloudwatch.Stats.SUM, period: PERIOD });
    return rateOf('refused', refused, requests, '429 rate (%)');
  }

  private addApiAlarms(api: ApiMetrics, api429Rate: cloudwatch.IMetric): void {
    this.addAlarm('Api4xxRate', {
      metric: api.clientErrorRate,
      threshold: MAX_4XX_PERCENT,
      description:
        `More than ${MAX_4XX_PERCENT}% of API requests answered 4xx in 5 minutes (counted from ` +
        `${MIN_REQUESTS_FOR_ERROR_RATE} requests on): a client is broken or someone is probing. Check first: the ` +
        'access log by status and routeKey, then by source ip.',
    });
    this.addAlarm('Api429Rate', {
      metric: api429Rate,
      threshold: MAX_429_PERCENT,
      description:
        `More than ${MAX_429_PERCENT}% of API requests answered 429 in 5 minutes (counted from ` +
        `${MIN_REQUESTS_FOR_ERROR_RATE} requests on). Check first: RateLimited (accounts over their limits) against ` +
        "the access log's 429s; the difference is the gateway's own throttle, which may need raising.",
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

  private addDeadlineAlarms(durations: readonly GroupSum[]): void {
    for (const { name, sum } of durations) {
      this.addAlarm(`DurationNearTimeout-${name}`, {
        metric: sum,
        threshold: MAX_DURATION_PERCENT_OF_TIMEOUT,
        description:
          `A ${name} function's slowest run in 5 minutes took more than ${MAX_DURATION_PERCENT_OF_TIMEOUT}% of its ` +
          'timeout: one slow dependency more and it times out half-way. Check first: which function (the dashboard ' +
          'graph), then its X-Ray traces for the slow call (upstream, DynamoDB, a cold token read).',
      });
    }
  }

  private addAsyncAlarms(dropped: readonly GroupSum[]): void {
    for (const { name, sum } of dropped) {
      this.addAlarm(`AsyncEventsDropped-${name}`, {
        metric: sum,
        threshold: 0,
        description:
          `Lambda dropped asynchronous events for ${name} functions (too old, or retries spent): a scheduled run ` +
          'never happened. Check first: the LambdaThrottles and LambdaErrors alarms of the same group.',
      });
    }
  }

  private addScheduledJobAlarms(jobs: Readonly<Record<string, ScheduledJob>>): void {
    for (const [name, job] of Object.entries(jobs)) {
      const period = Duration.minutes(job.everyMinutes);
      const label = pascalCase(name);
      this.addAlarm(`Heartbeat-${label}`, {
        // Runs that returned (executions that succeeded); no data at all (the job stopped being invoked or started) is
        // as bad as none succeeding.
        metric: new cloudwatch.MathExpression({
          expression: 'FILL(invocations, 0) - FILL(errors, 0)',
          usingMetrics: {
            invocations: job.function.metricInvocations({ statistic: cloudwatch.Stats.SUM, period }),
            errors: job.function.metricErrors({ statistic: cloudwatch.Stats.SUM, period }),
          },
          label: `${label} successful runs`,
          period,
        }),
        threshold: 1,
        below: true,
        periods: HEARTBEAT_PERIODS,
        missingDataBreaches: true,
        description:
          `The ${name} job has not once succeeded in ${HEARTBEAT_PERIODS} runs (${HEARTBEAT_PERIODS * job.everyMinutes} ` +
          `minutes). Check first: SchedulerTargetErrors, then the ${name} function's ERROR lines and its Duration ` +
          'against its timeout.',
      });
    }
    this.addAlarm('SchedulerTargetErrors', {
      metric: new cloudwatch.MathExpression({
        expression: 'FILL(targetErrors, 0) + FILL(dropped, 0)',
        usingMetrics: {
          targetErrors: schedulerMetric('TargetErrorCount'),
          dropped: schedulerMetric('InvocationDroppedCount'),
        },
        label: 'Scheduler target errors',
        period: PERIOD,
      }),
      threshold: 0,
      description:
        'EventBridge Scheduler could not invoke a scheduled job (target errors, or invocations dropped after its ' +
        "retries). Check first: the schedule role's lambda:InvokeFunction or states:StartExecution grant, the job " +
        "function's throttles, and the schedule's failed-starts queue.",
    });
  }

  private addTableAlarms(tables: Readonly<Record<string, dynamodb.ITableV2>>): void {
    for (const [name, table] of Object.entries(tables)) {
      const label = pascalCase(name);
      this.addAlarm(`DynamoThrottles-${label}`, {
        metric: new cloudwatch.MathExpression({
          expression: 'FILL(reads, 0) + FILL(writes, 0)',
          usingMetrics: {
            reads: table.metric('ReadThrottleEvents', { statistic: cloudwatch.Stats.SUM, period: PERIOD }),
            writes: table.metric('WriteThrottleEvents', { statistic: cloudwatch.Stats.SUM, period: PERIOD }),
          },
          label: `${label} throttle events`,
          period: PERIOD,
        }),
        threshold: 0,
        description:
          `DynamoDB throttled requests on the ${name} table (on demand: a hot key, or more than twice the previous ` +
          'peak at once). Check first: which operation (ThrottledRequests by Operation), then CloudWatch Contributor ' +
          'Insights for the hot key.',
      });
      this.addAlarm(`DynamoSystemErrors-${label}`, {
        metric: table.metricSystemErrorsForOperations({ operations: DYNAMODB_OPERATIONS, period: PERIOD }),
        threshold: 0,
        description:
          `DynamoDB answered requests on the ${name} table with a 500 (the SDK retries them; workflow steps retry ` +
          'too). Check first: the AWS Health dashboard for DynamoDB in the region, then the LambdaErrors alarms.',
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

  private addServiceAlarms(): void {
    this.addAlarm('ProvisionSlow', {
      metric: serviceMetric(metricNames.provisionDuration, 'p99'),
      threshold: PROVISION_BUDGET_MS,
      description:
        `Provisioning p99 (deploy accepted to instance active) above its ${PROVISION_BUDGET_MS / 60_000}-minute ` +
        "budget. Check first: UpstreamErrors and the upstream provider's status, then the provision executions' " +
        'CheckServer polling.',
    });
    this.addAlarm('LeakedServers', {
      metric: serviceMetric(metricNames.leakedServersDestroyed),
      threshold: 0,
      description:
        'The reconciler destroyed orphaned upstream servers (no live instance owned them; each was powered off when ' +
        "found and waited out its grace period). Check first: the reconciler's 'destroying an orphaned upstream " +
        "server' log lines (server_id, instance_id), then provision and delete executions of those instances.",
    });
    this.addAlarm('OrphanedServers', {
      metric: serviceMetric(metricNames.orphanServersFound),
      threshold: 0,
      description:
        'The sweep found upstream servers of ours that no instance owns and powered them off; they are destroyed after ' +
        'the grace period. Check first: npm run ops -- orphans list (spare any that must stay with orphans spare ' +
        "SERVER_ID), then the 'a server of ours that no instance owns' log lines.",
    });
    this.addAlarm('SweepGuardTripped', {
      metric: serviceMetric(metricNames.sweepGuardTripped),
      threshold: 0,
      description:
        'The sweep would have powered off or destroyed more servers in one run than its blast-radius guard allows, and ' +
        'stopped doing either. Check first: npm run ops -- orphans list (is the upstream token the right account’s? did ' +
        'instances go missing from the table?); once the cause is understood, npm run ops -- orphans resume.',
    });
    this.addAlarm('UpstreamUnauthorized', {
      metric: serviceMetric(metricNames.upstreamUnauthorized),
      threshold: 0,
      description:
        'The upstream API refused our token (401), even after it was read again from Secrets Manager: nothing can ' +
        'be created, changed or destroyed. Check first: the upstream token secret (was it revoked or mistyped?), ' +
        "then the provider's account status; put the right token with aws secretsmanager put-secret-value.",
    });
    this.addAlarm('UpstreamThrottled', {
      metric: serviceMetric(metricNames.upstreamThrottled),
      threshold: MAX_UPSTREAM_THROTTLED,
      description:
        `The upstream API answered 429 more than ${MAX_UPSTREAM_THROTTLED} times in 5 minutes: our upstream rate ` +
        'limit is nearly spent and actions start failing. Check first: ReconcilerRepairs and DeploysAccepted for a ' +
        'burst, then whether another client shares the upstream token.',
    });
    this.addAlarm('PaymentWebhookFailures', {
      metric: serviceMetric(metricNames.paymentWebhookFailures),
      threshold: MAX_PAYMENT_WEBHOOK_FAILURES,
      description:
        `More than ${MAX_PAYMENT_WEBHOOK_FAILURES} payment webhooks in 5 minutes failed their signature check: ` +
        'either someone is forging events, or the webhook signing secret no longer matches the provider’s (no top-up is ' +
        'credited until it does). Check first: the webhook endpoint’s signing secret in the Stripe dashboard against ' +
        'webhook_secret in the payments secret, then the PaymentWebhook function’s log.',
    });
    this.addAlarm('PaymentsUnmatched', {
      metric: serviceMetric(metricNames.paymentsUnmatched),
      threshold: 0,
      description:
        'A signed payment event named a top-up the service does not have, or one it does not match (another account, ' +
        "another amount, another checkout): nothing was credited. Check first: the PaymentWebhook log's 'a payment " +
        "event was refused' lines (event_id, reason), then that event and its payment in the Stripe dashboard.",
    });
    this.addAlarm('UncreditedPayments', {
      metric: serviceMetric(metricNames.uncreditedPaymentAge, 'Maximum'),
      threshold: MAX_UNCREDITED_PAYMENT_AGE_MS,
      description:
        `The top-up reconciler found a payment the provider took more than ${MAX_UNCREDITED_PAYMENT_AGE_MS / 60_000} minutes ` +
        'earlier that no webhook had credited (it credited it then): the provider’s webhooks are not reaching the service. ' +
        'Check first: the webhook endpoint’s recent deliveries in the Stripe dashboard, then PaymentWebhookFailures and ' +
        'the PaymentWebhook function’s errors.',
    });
    this.addAlarm('ReconcilerRepairBurst', {
      metric: serviceMetric(metricNames.reconcilerRepairs),
      threshold: MAX_RECONCILER_REPAIRS,
      description:
        `The reconciler repaired more than ${MAX_RECONCILER_REPAIRS} instances in one run: something leaves ` +
        "instances half-way. Check first: the ExecutionsFailed and ExecutionsTimedOut alarms, then the reconciler's " +
        'repair log lines (instance_id, from and to status).',
    });
  }
}

export interface ApiRollbackAlarmsProps {
  readonly stage: string;
  readonly httpStage: apigwv2.IHttpStage;
  readonly alarmTopic: sns.ITopic;
}

/**
 * The API's 5xx-rate and p99-latency alarms: a gradual deployment of the API functions rolls back on either. They
 * are made beside the deployment groups that read them (the API's nested stack), and shown on the dashboard.
 */
export class ApiRollbackAlarms extends Construct {
  readonly serverErrorRate: cloudwatch.Alarm;
  readonly latency: cloudwatch.Alarm;

  constructor(scope: Construct, id: string, { stage, httpStage, alarmTopic }: ApiRollbackAlarmsProps) {
    super(scope, id);
    const api = apiMetrics(httpStage);
    this.serverErrorRate = serviceAlarm(this, 'Api5xxRate', stage, alarmTopic, {
      metric: api.serverErrorRate,
      threshold: MAX_5XX_PERCENT,
      description:
        `More than ${MAX_5XX_PERCENT}% of API requests answered 5xx in 5 minutes (counted from ` +
        `${MIN_REQUESTS_FOR_ERROR_RATE} requests on); during a deploy it rolls the API functions back. Check first: ` +
        'the LambdaErrors alarms, then the API access log (status, routeKey, integrationError) and the failing route ' +
        "function's log group.",
    });
    this.latency = serviceAlarm(this, 'ApiLatencyP99', stage, alarmTopic, {
      metric: api.latencyP99,
      threshold: MAX_P99_LATENCY_MS,
      periods: LATENCY_PERIODS,
      description:
        `API p99 latency above ${MAX_P99_LATENCY_MS} ms for ${LATENCY_PERIODS} periods of 5 minutes; during a deploy ` +
        'it rolls the API functions back. Check first: the access log latency by routeKey, then UpstreamErrors and ' +
        'upstream response times (GetInstance and InstanceAction call the upstream API), then Lambda cold starts ' +
        'and throttles.',
    });
  }

  get alarms(): cloudwatch.Alarm[] {
    return [this.serverErrorRate, this.latency];
  }
}

/** The sum of a metric over functions, split so that no alarm reads more metrics than CloudWatch allows. */
function sumsOver(group: string, functions: readonly lambda.Function[], metric: (fn: lambda.Function) => cloudwatch.IMetric): GroupSum[] {
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
  readonly clientErrorRate: cloudwatch.IMetric;
}

/** AWS/ApiGateway metrics of the stage (dimensions ApiId and Stage). */
function apiMetrics(stage: apigwv2.IHttpStage): ApiMetrics {
  const requests = stage.metricCount({ statistic: cloudwatch.Stats.SUM, period: PERIOD, label: 'Requests' });
  const serverErrors = stage.metricServerError({ period: PERIOD, label: '5xx' });
  const clientErrors = stage.metricClientError({ period: PERIOD, label: '4xx' });
  return {
    requests,
    clientErrors,
    serverErrors,
    latencyP50: stage.metricLatency({ statistic: cloudwatch.Stats.p(50), period: PERIOD, label: 'p50' }),
    latencyP99: stage.metricLatency({ statistic: cloudwatch.Stats.p(99), period: PERIOD, label: 'p99' }),
    serverErrorRate: rateOf('errors', serverErrors, requests, '5xx rate (%)'),
    clientErrorRate: rateOf('clientErrors', clientErrors, requests, '4xx rate (%)'),
  };
}

/** `part` (graphed under `id`) as a percentage of `requests`, 0 while there are too few requests to say. */
function rateOf(id: string, part: cloudwatch.IMetric, requests: cloudwatch.IMetric, label: string): cloudwatch.MathExpression {
  return new cloudwatch.MathExpression({
    expression: `IF(requests >= ${MIN_REQUESTS_FOR_ERROR_RATE}, 100 * FILL(${id}, 0) / requests, 0)`,
    usingMetrics: { requests, [id]: part },
    label,
    period: PERIOD,
  });
}

/**
 * Per group, the largest share of its timeout any function's slowest run took (MAX over `100 * duration / timeout`),
 * split like `sumsOver`.
 */
function durationShares(group: string, functions: readonly lambda.Function[]): GroupSum[] {
  const parts = chunks(functions, MAX_METRICS_PER_ALARM);
  return parts.map((part, index) => {
    const name = parts.length === 1 ? group : `${group}${index + 1}`;
    const prefix = `${name.charAt(0).toLowerCase()}${name.slice(1)}`;
    // Ids unique across a graph that shows every group's line.
    const ids = part.map((_, position) => `${prefix}_duration${position}`);
    const shares = part.map((fn, position) => `100 * ${ids[position]} / ${(fn.timeout ?? Duration.seconds(3)).toMilliseconds()}`);
    const sum = new cloudwatch.MathExpression({
      expression: `MAX([${shares.join(', ')}])`,
      usingMetrics: Object.fromEntries(
        part.map((fn, position) => [ids[position], fn.metricDuration({ statistic: cloudwatch.Stats.MAXIMUM, period: PERIOD })]),
      ),
      label: name,
      period: PERIOD,
    });
    return { name, sum };
  });
}

/** EventBridge Scheduler's metric for the default schedule group, where the jobs' schedules live. */
function schedulerMetric(metricName: string): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: 'AWS/Scheduler',
    metricName,
    dimensionsMap: { ScheduleGroup: 'default' },
    statistic: cloudwatch.Stats.SUM,
    period: PERIOD,
  });
}

function pascalCase(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

function graph(
  title: string,
  metrics: readonly cloudwatch.IMetric[],
  width: number,
  limit?: cloudwatch.HorizontalAnnotation,
): cloudwatch.GraphWidget {
  return new cloudwatch.GraphWidget({ title, left: [...metrics], leftAnnotations: limit && [limit], width });
}

function apiWidgets(api: ApiMetrics, api429Rate: cloudwatch.IMetric): cloudwatch.IWidget[] {
  return [
    graph('API requests', [api.requests, api.clientErrors, api.serverErrors], 6),
    graph('API latency (ms)', [api.latencyP50, api.latencyP99], 6, { value: MAX_P99_LATENCY_MS, label: 'p99 limit' }),
    graph('API 5xx rate (%)', [api.serverErrorRate], 6, { value: MAX_5XX_PERCENT, label: 'limit' }),
    graph('API 4xx and 429 rates (%)', [api.clientErrorRate, api429Rate], 6),
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

/** One of the service's own EMF metrics (shared/metric-names.ts), as Powertools publishes it. */
function serviceMetric(name: MetricName, statistic: string = cloudwatch.Stats.SUM): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: POWERTOOLS_SERVICE_NAME },
    statistic,
    period: PERIOD,
  });
}

/** Signature failures in 5 minutes above which the secret, not a stray request, is suspect. */
const MAX_PAYMENT_WEBHOOK_FAILURES = 5;
/** A paid checkout left uncredited this long: its webhook is lost, not late. */
const MAX_UNCREDITED_PAYMENT_AGE_MS = 15 * 60_000;

/** The agents' row: MCP requests (each a tools/list or one tool call), errors, and how long they take (waits included). */
function mcpWidgets(fn: lambda.Function): cloudwatch.IWidget[] {
  const period = PERIOD;
  return [
    graph('MCP requests and errors', [fn.metricInvocations({ period }), fn.metricErrors({ period }), fn.metricThrottles({ period })], 12),
    graph(
      'MCP duration (ms; wait_for_instance up to 20 s)',
      ['p50', 'p99', 'Maximum'].map((statistic) => fn.metricDuration({ statistic, period })),
      12,
    ),
  ];
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
      graph(
        'Rate limits and upstream errors',
        counts(
          metricNames.rateLimited,
          metricNames.upstreamErrors,
          metricNames.upstreamUnauthorized,
          metricNames.upstreamThrottled,
          metricNames.storedStatusReads,
        ),
        8,
      ),
    ],
    [
      graph(
        'Billing and payments',
        [
          ...counts(
            metricNames.accountReviews,
            metricNames.billingPauses,
            metricNames.paymentWebhookFailures,
            metricNames.paymentsUnmatched,
          ),
          serviceMetric(metricNames.uncreditedPaymentAge, 'Maximum'),
          serviceMetric(metricNames.billingPauseLag, 'Maximum'),
        ],
        8,
      ),
      graph('Reconciler', counts(metricNames.reconcilerRepairs, metricNames.serversReadopted, metricNames.serverAbsenceSuspected), 8),
      graph(
        'Orphaned servers',
        counts(metricNames.orphanServersFound, metricNames.leakedServersDestroyed, metricNames.sweepGuardTripped),
        8,
      ),
      graph(
        'Drift repaired',
        counts(
          metricNames.driftServerVanished,
          metricNames.driftPowerChanged,
          metricNames.driftSizeChanged,
          metricNames.foreignServerRefused,
        ),
        8,
      ),
    ],
  ];
}
