import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, RemovalPolicy, Stack, type CfnElement } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { ApiFunction, REPO_ROOT } from '../../infra/constructs/api-function';
import { routes } from '../../infra/routes';
import { ServiceStack, type Stage } from '../../infra/stack';
import { tableNames, tables } from '../../infra/tables';
import { workflows } from '../../infra/workflows';
import { schedules } from '../../infra/schedules';

type Resource = { Properties: Record<string, any>; DeletionPolicy?: string; UpdateReplacePolicy?: string };
type Statement = { Action: string | string[]; Resource: unknown };

/** The feature flags `cdk synth` runs with, so these tests see the same template. */
const cdkJsonContext = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')).context;

const DYNAMODB_WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:TransactWriteItems',
];

function synthesize(stage: Stage, extraContext: Record<string, string> = {}) {
  // Bundling skipped: the real bundling has its own test below.
  const app = new App({ context: { ...cdkJsonContext, ...extraContext, stage, 'aws:cdk:bundling-stacks': [] } });
  const stack = new ServiceStack(app, `VpsService-${stage}`);
  return { stack, template: Template.fromStack(stack) };
}

function logicalId(construct: IConstruct): string {
  const stack = Stack.of(construct);
  return stack.resolve(stack.getLogicalId(construct.node.defaultChild as CfnElement));
}

const asList = (value: string | string[]) => (Array.isArray(value) ? value : [value]);

function policyStatements(template: Template, roleId?: string): Statement[] {
  const filter = roleId ? { Properties: { Roles: Match.arrayWith([{ Ref: roleId }]) } } : undefined;
  return Object.values(template.findResources('AWS::IAM::Policy', filter)).flatMap(
    (policy) => policy.Properties.PolicyDocument.Statement as Statement[],
  );
}

describe('ServiceStack (dev)', () => {
  let stack: ServiceStack;
  let template: Template;
  let functions: Record<string, Resource>;
  let logGroups: Record<string, Resource>;

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
    functions = template.findResources('AWS::Lambda::Function') as Record<string, Resource>;
    logGroups = template.findResources('AWS::Logs::LogGroup') as Record<string, Resource>;
  });

  it('has one route per route definition, each with its route key, on a payload 2.0 Lambda integration', () => {
    template.resourceCountIs('AWS::ApiGatewayV2::Route', routes.length);
    for (const route of routes) {
      const routeKey = route.path === '$default' ? '$default' : `${route.method} ${route.path}`;
      template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: routeKey, AuthorizationType: 'NONE' });
    }
    template.allResourcesProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      PayloadFormatVersion: '2.0',
    });
  });

  it('logs API access as JSON and throttles the default stage', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: Match.anyValue(), ThrottlingBurstLimit: Match.anyValue() },
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.anyValue() },
    });
    const [stage] = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'));
    const format = JSON.parse(stage?.Properties.AccessLogSettings.Format);
    expect(format).toMatchObject({
      requestId: '$context.requestId',
      routeKey: '$context.routeKey',
      status: '$context.status',
      latency: '$context.responseLatency',
      ip: '$context.identity.sourceIp',
    });
  });

  it('runs every function on nodejs24.x, arm64, with active tracing and its own log group with retention', () => {
    const stepCount = Object.values(workflows).reduce((sum, workflow) => sum + Object.keys(workflow.steps).length, 0);
    expect(Object.keys(functions)).toHaveLength(routes.length + stepCount + Object.keys(schedules).length);
    for (const fn of Object.values(functions)) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        MemorySize: 512,
        Handler: 'index.handler',
      });
      const logGroup = logGroups[fn.Properties.LoggingConfig.LogGroup.Ref];
      expect(logGroup?.Properties.RetentionInDays).toBe(30);
      expect(fn.Properties.Environment.Variables).toMatchObject({ NODE_OPTIONS: '--enable-source-maps', STAGE: 'dev' });
      expect(fn.Properties.Environment.Variables).not.toHaveProperty('DYNAMODB_ENDPOINT');
      expect(fn.Properties.Environment.Variables).not.toHaveProperty('SFN_ENDPOINT');
    }
  });

  it('tells a function only the tables and workflows it may touch', () => {
    const env = (fn: ApiFunction | undefined) => functions[logicalId(fn!.function)]?.Properties.Environment.Variables;
    const listInstances = env(stack.api.functions.ListInstances);
    const tableVariables = Object.keys(listInstances).filter((name) => name.endsWith('_TABLE'));
    expect(tableVariables.sort()).toEqual(['ACCOUNTS_TABLE', 'API_KEYS_TABLE', 'COUNTERS_TABLE', 'INSTANCES_TABLE']);
    expect(listInstances).not.toHaveProperty('PROVISION_STATE_MACHINE_ARN');
    expect(listInstances).not.toHaveProperty('UPSTREAM_TOKEN_SECRET_ARN');
    expect(env(stack.api.functions.CreateInstance)).toHaveProperty('PROVISION_STATE_MACHINE_ARN');
    expect(env(stack.workflows.provision.steps.CreateServerFunctionArn)).toMatchObject({
      UPSTREAM_BASE_URL: 'https://api.digitalocean.com',
      UPSTREAM_TOKEN_SECRET_ARN: { Ref: logicalId(stack.node.findChild('UpstreamToken')) },
    });
  });

  it('builds every table on demand with PITR, SSE, its GSIs and TTL where defined', () => {
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', tableNames.length);
    for (const name of tableNames) {
      const definition = tables[name];
      const table = template.findResources('AWS::DynamoDB::GlobalTable')[logicalId(stack.tables[name])] as Resource;
      expect(table.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
        Replicas: [{ PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } }],
      });
      const ttl = 'timeToLiveAttribute' in definition ? definition.timeToLiveAttribute : undefined;
      expect(table.Properties.TimeToLiveSpecification).toEqual(ttl ? { AttributeName: ttl, Enabled: true } : undefined);
      const indexes = 'globalSecondaryIndexes' in definition ? definition.globalSecondaryIndexes : [];
      const builtIndexes: { IndexName: string }[] = table.Properties.GlobalSecondaryIndexes ?? [];
      expect(builtIndexes.map((index) => index.IndexName)).toEqual(indexes.map((index) => index.indexName));
      expect(table.DeletionPolicy).toBe('Delete');
    }
  });

  it('runs provisioning as a STANDARD, fully logged, traced state machine over exactly its step functions', () => {
    const provision = stack.workflows.provision;
    const stateMachine = template.findResources('AWS::StepFunctions::StateMachine')[logicalId(provision.stateMachine)];
    expect(stateMachine?.Properties).toMatchObject({
      StateMachineType: 'STANDARD',
      LoggingConfiguration: { Level: 'ALL' },
      TracingConfiguration: { Enabled: true },
    });
    const functionArns = Object.fromEntries(
      Object.keys(workflows.provision.steps).map((key) => [
        key,
        { 'Fn::GetAtt': [logicalId(provision.steps[key]!.function), 'Arn'] },
      ]),
    );
    expect(stateMachine?.Properties.DefinitionSubstitutions).toEqual(functionArns);

    const invokes = policyStatements(template, logicalId(provision.stateMachine.role)).filter((statement) =>
      asList(statement.Action).includes('lambda:InvokeFunction'),
    );
    expect(invokes).toHaveLength(1);
    expect(invokes[0]?.Resource).toEqual(expect.arrayContaining(Object.values(functionArns)));
    expect(invokes[0]?.Resource).toHaveLength(Object.keys(functionArns).length);
  });

  it('gives ListInstances no write action on the instances table', () => {
    const instancesTableId = logicalId(stack.tables.instances);
    const onInstances = policyStatements(template, logicalId(stack.api.functions.ListInstances!.role)).filter(
      (statement) => JSON.stringify(statement.Resource).includes(instancesTableId),
    );
    const actions = onInstances.flatMap((statement) => asList(statement.Action));
    expect(actions).toContain('dynamodb:Query');
    expect(actions.filter((action) => DYNAMODB_WRITE_ACTIONS.includes(action))).toEqual([]);
  });

  const byRef = (a: { Ref: string }, b: { Ref: string }) => a.Ref.localeCompare(b.Ref);

  it('lets only the routes that declare a workflow, and the scheduled jobs, start executions', () => {
    const starters = Object.values(template.findResources('AWS::IAM::Policy')).filter((policy) =>
      (policy.Properties.PolicyDocument.Statement as Statement[]).some((statement) =>
        asList(statement.Action).includes('states:StartExecution'),
      ),
    );
    const declared = routes.filter((route) => route.access.startsWorkflows?.length).map((route) => route.name);
    expect(declared).toEqual(['CreateInstance', 'DeleteInstance', 'InstanceAction']);
    expect(starters.flatMap((policy) => policy.Properties.Roles).sort(byRef)).toEqual(
      [
        ...declared.map((name) => ({ Ref: logicalId(stack.api.functions[name]!.role) })),
        ...Object.values(stack.scheduled).map((scheduled) => ({ Ref: logicalId(scheduled.function.role) })),
      ].sort(byRef),
    );
  });

  it('invokes each scheduled function at its rate through a role limited to that function', () => {
    for (const [name, definition] of Object.entries(schedules)) {
      const scheduled = stack.scheduled[name as keyof typeof schedules];
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: `rate(${definition.everyMinutes} minutes)`,
        Target: Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalId(scheduled.function.function), 'Arn'] } }),
      });
    }
  });

  it('never grants dynamodb:* or other service-wide actions', () => {
    const actions = policyStatements(template).flatMap((statement) => asList(statement.Action));
    expect(actions.filter((action) => action.endsWith(':*') || action === '*')).toEqual([]);
  });

  it('passes cdk-nag AwsSolutions with no unacknowledged error or warning', () => {
    const { violations } = new AwsSolutionsChecks().validateScope(stack);
    expect(violations.filter((violation) => violation.severity === 'error').map((v) => v.ruleName)).toEqual([]);
    expect(violations.filter((violation) => violation.severity === 'warning').map((v) => v.ruleName)).toEqual([]);
    expect(Annotations.fromStack(stack).findError('*', Match.anyValue())).toEqual([]);
    expect(Annotations.fromStack(stack).findWarning('*', Match.anyValue())).toEqual([]);
  });
});

describe('ServiceStack (prod)', () => {
  let stack: ServiceStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = synthesize('prod', { instanceDomainSuffix: 'vps.example.com' }));
  });

  it('protects and retains every table', () => {
    for (const name of tableNames) {
      const table = template.findResources('AWS::DynamoDB::GlobalTable')[logicalId(stack.tables[name])] as Resource;
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.UpdateReplacePolicy).toBe('Retain');
      expect(table.Properties.Replicas).toEqual([expect.objectContaining({ DeletionProtectionEnabled: true })]);
    }
  });

  it('keeps logs longer than dev, and keeps them when the stack goes', () => {
    for (const logGroup of Object.values(template.findResources('AWS::Logs::LogGroup')) as Resource[]) {
      expect(logGroup.Properties.RetentionInDays).toBeGreaterThan(30);
      expect(logGroup.DeletionPolicy).toBe('Retain');
    }
  });

  it('refuses to synthesize without an instance domain', () => {
    expect(() => synthesize('prod')).toThrow(/instanceDomainSuffix/);
  });
});

describe('ApiFunction bundling', () => {
  it('bundles a handler offline with the local esbuild into a loadable ES module', () => {
    const app = new App({ context: cdkJsonContext });
    const stack = new Stack(app, 'BundlingProbe');
    new ApiFunction(stack, 'ListInstances', {
      entry: 'functions/api/list-instances.ts',
      access: {},
      service: {
        stage: 'test',
        logs: { retention: RetentionDays.ONE_DAY, removalPolicy: RemovalPolicy.DESTROY },
        tables: {},
        stateMachines: {},
      },
    });
    const assembly = app.synth();
    try {
      const assets = readdirSync(assembly.directory).filter((name) => name.startsWith('asset.'));
      expect(assets).toHaveLength(1);
      const bundle = join(assembly.directory, assets[0]!, 'index.mjs');
      expect(readFileSync(bundle, 'utf8')).toMatch(/^import \{ createRequire as __createRequire \}/);
      expect(existsSync(`${bundle}.map`)).toBe(true);
      // Loading it proves nothing was left external (the SDK included) and the require shim works.
      const load = `await import(${JSON.stringify(pathToFileURL(bundle).href)})`;
      execFileSync(process.execPath, ['--input-type=module', '-e', load]);
    } finally {
      rmSync(assembly.directory, { recursive: true, force: true });
    }
  }, 20_000);
});
