import type { Template } from 'aws-cdk-lib/assertions';
import { POWERTOOLS_SERVICE_NAME } from '../../infra/constructs/api-function';
import type { ServiceStack } from '../../infra/stack';
import { workflowNames } from '../../shared/workflow-names';
import { METRICS_NAMESPACE, metricNames } from '../../shared/metric-names';
import { logicalId, referencedIds, serviceFunctions, synthesize, type Resource } from './synth';

type MetricStat = {
  Metric: { Namespace: string; MetricName: string; Dimensions: { Name: string; Value: unknown }[] };
  Stat: string;
  Period: number;
};
type MetricQuery = { Id: string; Expression?: string; MetricStat?: MetricStat; ReturnData?: boolean };

/** A metric row of a dashboard graph: namespace, metric name, dimension pairs, then options. */
type DashboardRow = (string | Record<string, unknown>)[];

describe('Operations', () => {
  let stack: ServiceStack;
  let template: Template;
  let alarms: Record<string, Resource['Properties']>;
  let functionIds: string[];

  const alarm = (name: string) => {
    const found = alarms[`VpsService-dev-${name}`];
    if (!found) throw new Error(`no alarm ${name}`);
    return found;
  };
  const alarmsStartingWith = (prefix: string) =>
    Object.entries(alarms)
      .filter(([name]) => name.startsWith(`VpsService-dev-${prefix}`))
      .map(([, properties]) => properties);
  /** The metrics a math-expression alarm reads. */
  const readMetrics = (properties: Resource['Properties']) =>
    (properties.Metrics as MetricQuery[]).flatMap((query) => (query.MetricStat ? [query.MetricStat.Metric] : []));
  const dimension = (metric: MetricStat['Metric'], name: string) => metric.Dimensions.find((candidate) => candidate.Name === name)?.Value;

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
    alarms = Object.fromEntries(
      Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((resource) => [
        resource.Properties.AlarmName,
        resource.Properties,
      ]),
    );
    functionIds = Object.keys(serviceFunctions(template));
  });

  describe('dashboard', () => {
    let dashboards: Record<string, Resource>;
    let rows: DashboardRow[];
    let titles: string[];

    beforeAll(() => {
      dashboards = template.findResources('AWS::CloudWatch::Dashboard') as Record<string, Resource>;
      // Tokens inside the body become "<LogicalId>" so that it parses as the JSON CloudWatch will read.
      const [, parts] = Object.values(dashboards)[0]!.Properties.DashboardBody['Fn::Join'] as [string, unknown[]];
      const body = JSON.parse(parts.map((part) => (typeof part === 'string' ? part : `<${referencedIds(part).join(',')}>`)).join(''));
      const widgets = body.widgets as { properties: { title?: string; metrics?: DashboardRow[] } }[];
      rows = widgets.flatMap((widget) => widget.properties.metrics ?? []);
      titles = widgets.flatMap((widget) => widget.properties.title ?? []);
    });

    /** Whether a graph shows this metric (namespace, name, dimension pairs), with this statistic if given. */
    const hasRow = (prefix: readonly string[], stat?: string) =>
      rows.some(
        (row) =>
          prefix.every((value, index) => row[index] === value) && (stat === undefined || (row.at(-1) as { stat?: string }).stat === stat),
      );

    it('is one dashboard, named after the stage', () => {
      const names = Object.values(dashboards).map((resource) => resource.Properties.DashboardName);
      expect(names).toEqual(['VpsService-dev']);
    });

    it('graphs API requests, 4xx, 5xx and p50/p99 latency of the stage', () => {
      const stage = ['ApiId', `<${logicalId(stack.api.api)}>`, 'Stage', '$default'];
      for (const metric of ['Count', '4xx', '5xx']) {
        expect(hasRow(['AWS/ApiGateway', metric, ...stage]), metric).toBe(true);
      }
      expect(hasRow(['AWS/ApiGateway', 'Latency', ...stage], 'p50')).toBe(true);
      expect(hasRow(['AWS/ApiGateway', 'Latency', ...stage], 'p99')).toBe(true);
    });

    it('graphs the errors and throttles of every function', () => {
      for (const metric of ['Errors', 'Throttles']) {
        const graphed = new Set(rows.filter((row) => row[0] === 'AWS/Lambda' && row[1] === metric).map((row) => row[3]));
        expect([...graphed].sort(), metric).toEqual(functionIds.map((id) => `<${id}>`).sort());
      }
      expect(titles).toEqual(expect.arrayContaining(['Lambda errors', 'Lambda throttles']));
    });

    it("gives the MCP server a row: its requests, errors and throttles, and its duration's p50, p99 and maximum", () => {
      const mcp = ['FunctionName', `<${logicalId(stack.api.functions.Mcp!.function)}>`];

      expect(titles).toEqual(expect.arrayContaining(['MCP requests and errors', 'MCP duration (ms; wait_for_instance up to 20 s)']));
      for (const metric of ['Invocations', 'Errors', 'Throttles']) expect(hasRow(['AWS/Lambda', metric, ...mcp]), metric).toBe(true);
      for (const stat of ['p50', 'p99', 'Maximum']) expect(hasRow(['AWS/Lambda', 'Duration', ...mcp], stat), stat).toBe(true);
    });

    it('graphs started, succeeded, failed and timed-out executions of every state machine', () => {
      for (const name of workflowNames) {
        const machine = `<${logicalId(stack.workflows[name].stateMachine)}>`;
        for (const metric of ['ExecutionsStarted', 'ExecutionsSucceeded', 'ExecutionsFailed', 'ExecutionsTimedOut']) {
          expect(hasRow(['AWS/States', metric, 'StateMachineArn', machine]), `${name} ${metric}`).toBe(true);
        }
      }
    });

    it("graphs every one of the service's EMF metrics, with provisioning duration as p50 and p99", () => {
      const service = ['service', POWERTOOLS_SERVICE_NAME];
      for (const metric of Object.values(metricNames)) {
        expect(hasRow([METRICS_NAMESPACE, metric, ...service]), metric).toBe(true);
      }
      expect(hasRow([METRICS_NAMESPACE, metricNames.provisionDuration, ...service], 'p50')).toBe(true);
      expect(hasRow([METRICS_NAMESPACE, metricNames.provisionDuration, ...service], 'p99')).toBe(true);
    });
  });

  describe('alarms', () => {
    it('alarm on an API 5xx rate above 1 % over 5 minutes, once there are enough requests', () => {
      const properties = alarm('Api5xxRate');
      expect(properties).toMatchObject({
        Threshold: 1,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 1,
      });
      const watched = (properties.Metrics as MetricQuery[]).find((query) => query.ReturnData !== false);
      expect(watched?.Expression).toMatch(/^IF\(requests >= \d+, 100 \* FILL\(errors, 0\) \/ requests, 0\)$/);
      const read = readMetrics(properties);
      expect(read.map((metric) => [metric.Namespace, metric.MetricName])).toEqual([
        ['AWS/ApiGateway', 'Count'],
        ['AWS/ApiGateway', '5xx'],
      ]);
      for (const metric of read) expect(dimension(metric, 'Stage')).toBe('$default');
    });

    it('alarm on API p99 latency above 2 s for 3 periods of 5 minutes', () => {
      const properties = alarm('ApiLatencyP99');
      expect(properties).toMatchObject({ Threshold: 2000, EvaluationPeriods: 3, DatapointsToAlarm: 3 });
      const read = (properties.Metrics as MetricQuery[]).map((query) => query.MetricStat);
      expect(read).toEqual([expect.objectContaining({ Stat: 'p99', Period: 300 })]);
      expect(read[0]?.Metric).toMatchObject({ Namespace: 'AWS/ApiGateway', MetricName: 'Latency' });
      expect(dimension(read[0]!.Metric, 'Stage')).toBe('$default');
    });

    it.each(['Errors', 'Throttles'])('alarm on Lambda %s > 0 of every function, 10 metrics per alarm', (metric) => {
      const group = alarmsStartingWith(`Lambda${metric}-`);
      const watched = group.flatMap((properties) => {
        expect(properties).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
        const read = readMetrics(properties);
        expect(read.length).toBeLessThanOrEqual(10);
        expect(new Set(read.map((m) => `${m.Namespace} ${m.MetricName}`))).toEqual(new Set([`AWS/Lambda ${metric}`]));
        return read.flatMap((m) => referencedIds(dimension(m, 'FunctionName')));
      });
      expect(watched.sort()).toEqual([...functionIds].sort());
    });

    it('alarm on failed and timed-out executions of every state machine', () => {
      for (const name of workflowNames) {
        const machine = [{ Name: 'StateMachineArn', Value: { Ref: logicalId(stack.workflows[name].stateMachine) } }];
        const onMachine = Object.values(alarms).filter((properties) => JSON.stringify(properties.Dimensions) === JSON.stringify(machine));
        for (const properties of onMachine) {
          expect(properties).toMatchObject({ Namespace: 'AWS/States', Statistic: 'Sum', Threshold: 0, Period: 300 });
        }
        expect(onMachine.map((properties) => properties.MetricName).sort(), name).toEqual(['ExecutionsFailed', 'ExecutionsTimedOut']);
      }
    });

    it('alarm on provisioning p99 above its 5-minute budget', () => {
      expect(alarm('ProvisionSlow')).toMatchObject({
        Namespace: METRICS_NAMESPACE,
        MetricName: metricNames.provisionDuration,
        Dimensions: [{ Name: 'service', Value: POWERTOOLS_SERVICE_NAME }],
        ExtendedStatistic: 'p99',
        Threshold: 300_000,
      });
    });

    it.each(['LambdaErrors-Mcp', 'LambdaThrottles-Mcp', 'DurationNearTimeout-Mcp'])('alarm %s on the MCP function alone', (name) => {
      const read = readMetrics(alarm(name));
      expect(read.map((m) => dimension(m, 'FunctionName'))).toEqual([{ Ref: logicalId(stack.api.functions.Mcp!.function) }]);
    });

    it.each([
      ['OrphanedServers', 'OrphanServersFound'],
      ['SweepGuardTripped', 'SweepGuardTripped'],
    ])('alarm %s on any count of %s', (name, metric) => {
      expect(alarm(name)).toMatchObject({
        Namespace: METRICS_NAMESPACE,
        MetricName: metric,
        Dimensions: [{ Name: 'service', Value: POWERTOOLS_SERVICE_NAME }],
        Statistic: 'Sum',
        Threshold: 0,
      });
    });

    it('alarm on any leaked upstream server', () => {
      expect(alarm('LeakedServers')).toMatchObject({
        Namespace: METRICS_NAMESPACE,
        MetricName: metricNames.leakedServersDestroyed,
        Dimensions: [{ Name: 'service', Value: POWERTOOLS_SERVICE_NAME }],
        Statistic: 'Sum',
        Threshold: 0,
      });
    });

    it('all notify the alarm topic, treat missing data as fine except heartbeats and canaries, and say what to check first', () => {
      const topic = { Ref: logicalId(stack.operations.alarmTopic) };
      expect(Object.keys(alarms)).toHaveLength(stack.operations.alarms.length);
      for (const [name, properties] of Object.entries(alarms)) {
        expect(properties, name).toMatchObject({
          AlarmActions: [topic],
          OKActions: [topic],
          TreatMissingData: /^VpsService-dev-(Heartbeat-|Canary)/.test(name) ? 'breaching' : 'notBreaching',
          AlarmDescription: expect.stringContaining('Check first:'),
        });
      }
    });

    it.each([
      ['reconciler', 300],
      ['reviews', 60],
    ] as const)('alarm when the %s job has not succeeded in three periods of %i s, missing data breaching', (job, period) => {
      const properties = alarm(`Heartbeat-${job.charAt(0).toUpperCase()}${job.slice(1)}`);
      expect(properties).toMatchObject({
        ComparisonOperator: 'LessThanThreshold',
        Threshold: 1,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        TreatMissingData: 'breaching',
      });
      const watched = (properties.Metrics as MetricQuery[]).find((query) => query.ReturnData !== false);
      expect(watched?.Expression).toBe('FILL(invocations, 0) - FILL(errors, 0)');
      const fn = { Ref: logicalId(stack.scheduled[job].function.function) };
      const read = (properties.Metrics as MetricQuery[]).flatMap((query) => (query.MetricStat ? [query.MetricStat] : []));
      expect(read.map((stat) => [stat.Metric.MetricName, stat.Stat, stat.Period, dimension(stat.Metric, 'FunctionName')])).toEqual([
        ['Invocations', 'Sum', period, fn],
        ['Errors', 'Sum', period, fn],
      ]);
    });

    it('alarm on Scheduler target errors and dropped invocations', () => {
      const read = readMetrics(alarm('SchedulerTargetErrors'));
      expect(read.map((metric) => [metric.Namespace, metric.MetricName, dimension(metric, 'ScheduleGroup')])).toEqual([
        ['AWS/Scheduler', 'TargetErrorCount', 'default'],
        ['AWS/Scheduler', 'InvocationDroppedCount', 'default'],
      ]);
    });

    it('alarm on dropped async events of every function', () => {
      const watched = alarmsStartingWith('AsyncEventsDropped-').flatMap((properties) => {
        expect(properties).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
        const read = readMetrics(properties);
        expect(new Set(read.map((m) => m.MetricName))).toEqual(new Set(['AsyncEventsDropped']));
        return read.flatMap((m) => referencedIds(dimension(m, 'FunctionName')));
      });
      expect(watched.sort()).toEqual([...functionIds].sort());
    });

    it("alarm when any function's slowest run passes 80 % of its own timeout", () => {
      const timeouts = Object.fromEntries(
        Object.entries(template.findResources('AWS::Lambda::Function')).map(([id, fn]) => [id, fn.Properties.Timeout * 1000]),
      );
      const watched = alarmsStartingWith('DurationNearTimeout-').flatMap((properties) => {
        expect(properties).toMatchObject({ Threshold: 80, ComparisonOperator: 'GreaterThanThreshold' });
        const queries = properties.Metrics as MetricQuery[];
        const expression = queries.find((query) => query.ReturnData !== false)!.Expression!;
        return queries.flatMap((query) => {
          if (!query.MetricStat) return [];
          expect(query.MetricStat).toMatchObject({ Stat: 'Maximum', Metric: { MetricName: 'Duration' } });
          const [id] = referencedIds(dimension(query.MetricStat.Metric, 'FunctionName'));
          expect(expression).toContain(`100 * ${query.Id} / ${timeouts[id!]}`);
          return [id];
        });
      });
      expect(watched.sort()).toEqual([...functionIds].sort());
      expect(timeouts[logicalId(stack.api.functions.InstanceAction!.function)]).toBe(21_000);
    });

    it('alarm on throttles and system errors of every table', () => {
      for (const name of Object.keys(stack.tables)) {
        const label = `${name.charAt(0).toUpperCase()}${name.slice(1)}`;
        const table = { Ref: logicalId(stack.tables[name as keyof typeof stack.tables]) };
        const throttles = readMetrics(alarm(`DynamoThrottles-${label}`));
        expect(throttles.map((metric) => [metric.MetricName, dimension(metric, 'TableName')])).toEqual([
          ['ReadThrottleEvents', table],
          ['WriteThrottleEvents', table],
        ]);
        const systemErrors = readMetrics(alarm(`DynamoSystemErrors-${label}`));
        expect(systemErrors.map((metric) => dimension(metric, 'Operation'))).toEqual(
          expect.arrayContaining(['GetItem', 'PutItem', 'UpdateItem', 'Query', 'TransactWriteItems']),
        );
        for (const metric of systemErrors) expect([metric.MetricName, dimension(metric, 'TableName')]).toEqual(['SystemErrors', table]);
      }
    });

    it('alarm on a 4xx rate above 25 % and a 429 rate above 5 %, counting every 429 from the access log', () => {
      expect(alarm('Api4xxRate')).toMatchObject({ Threshold: 25 });
      expect(readMetrics(alarm('Api4xxRate')).map((metric) => metric.MetricName)).toEqual(['Count', '4xx']);
      expect(alarm('Api429Rate')).toMatchObject({ Threshold: 5 });
      expect(readMetrics(alarm('Api429Rate')).map((metric) => [metric.Namespace, metric.MetricName])).toEqual([
        ['AWS/ApiGateway', 'Count'],
        [METRICS_NAMESPACE, 'Api429'],
      ]);
      template.hasResourceProperties('AWS::Logs::MetricFilter', {
        LogGroupName: { Ref: logicalId(stack.api.accessLogs) },
        FilterPattern: '{ $.status = "429" }',
        MetricTransformations: [{ MetricNamespace: METRICS_NAMESPACE, MetricName: 'Api429', MetricValue: '1' }],
      });
    });

    it.each([
      ['UpstreamUnauthorized', 'UpstreamUnauthorized', 0],
      ['UpstreamThrottled', 'UpstreamThrottled', 20],
      ['ReconcilerRepairBurst', 'ReconcilerRepairs', 10],
    ])('alarm %s when the driver or reconciler counts %s above %i', (name, metric, threshold) => {
      expect(alarm(name)).toMatchObject({
        Namespace: METRICS_NAMESPACE,
        MetricName: metric,
        Dimensions: [{ Name: 'service', Value: POWERTOOLS_SERVICE_NAME }],
        Statistic: 'Sum',
        Threshold: threshold,
      });
    });
  });

  describe('alarm topic', () => {
    it('accepts only TLS, and publishing only from these alarms', () => {
      const [policy] = Object.values(template.findResources('AWS::SNS::TopicPolicy'));
      const statements = policy?.Properties.PolicyDocument.Statement;
      expect(statements).toContainEqual(
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      );
      const publish = statements.find((statement: { Effect: string }) => statement.Effect === 'Allow');
      expect(publish).toMatchObject({ Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: 'sns:Publish' });
      const [, arnParts] = publish.Condition.ArnLike['aws:SourceArn']['Fn::Join'];
      expect(arnParts.at(-1)).toBe(':alarm:VpsService-dev-*');
    });

    it('is a stack output', () => {
      template.hasOutput('AlarmTopicArn', { Value: { Ref: logicalId(stack.operations.alarmTopic) } });
    });

    it('subscribes the address given as alarmEmail, and none without it', () => {
      const subscribed = synthesize('dev', { alarmEmail: 'oncall@example.com' }).template;
      subscribed.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' });
      expect(Object.keys(template.findResources('AWS::SNS::Subscription'))).toEqual([]);
    });
  });
});
