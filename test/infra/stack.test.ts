import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, AssetStaging, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { FunctionAccess, TableAccess } from '../../shared/access';
import { ApiFunction, grantedAccess } from '../../infra/constructs/api-function';
import { mergeAccess } from '../../shared/access';
import { authAccess, routeAuthAccess, routes } from '../../shared/routes';
import type { ServiceStack } from '../../infra/stack';
import { tableNames, tables } from '../../shared/tables';
import { workflowNames } from '../../shared/workflow-names';
import { workflows } from '../../infra/workflows';
import { scheduleNames, schedules } from '../../infra/schedules';
import { eventFunctions, type EventFunctionName } from '../../infra/event-functions';
import {
  asList,
  cdkJsonContext,
  logicalId,
  policyStatements,
  referencedIds,
  serviceFunctions,
  PROD_CONTEXT,
  synthesize,
  templatesOf,
  type Resource,
  type Statement,
} from './synth';

/** Granted by a stream's event source mapping: the stream, not the table's items. */
const DYNAMODB_STREAM_ACTIONS = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'];
const DYNAMODB_WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:TransactWriteItems',
];

/** A deployed function with the access its definition declares. */
interface DeclaredFunction {
  readonly name: string;
  readonly fn: ApiFunction;
  readonly access: FunctionAccess;
}

/** Every function of the stack: routes (with their auth's access), workflow steps, scheduled jobs and event functions. */
function declaredFunctions(stack: ServiceStack): DeclaredFunction[] {
  return [
    ...routes.map((route) => ({
      name: route.name,
      fn: stack.api.functions[route.name]!,
      access: grantedAccess(mergeAccess(route.access, routeAuthAccess(route))),
    })),
    ...workflowNames.flatMap((workflow) =>
      Object.entries(workflows[workflow].steps).map(([key, step]) => ({
        name: `${workflow}.${key}`,
        fn: stack.workflows[workflow].steps[key]!,
        access: grantedAccess(step.access),
      })),
    ),
    ...scheduleNames.map((name) => ({
      name,
      fn: stack.scheduled[name].function,
      access: grantedAccess(schedules[name].access),
    })),
    ...(Object.keys(eventFunctions) as EventFunctionName[]).map((name) => ({
      name,
      fn: stack.events.functions[name],
      access: grantedAccess(eventFunctions[name].access as FunctionAccess),
    })),
  ];
}

/** For each resource a role's statements name, the actions with `prefix` granted on it. */
function actionsByResource(statements: readonly Statement[], prefix: string): Map<string, Set<string>> {
  const granted = new Map<string, Set<string>>();
  for (const statement of statements.filter((candidate) => candidate.Effect === 'Allow')) {
    const actions = asList(statement.Action).filter((action) => action.startsWith(prefix));
    for (const resource of actions.length ? asList(statement.Resource) : []) {
      // A resource naming no construct (a literal ARN or `*`) stands for itself.
      const ids = referencedIds(resource);
      for (const id of ids.length ? ids : [JSON.stringify(resource)]) {
        granted.set(id, new Set([...(granted.get(id) ?? []), ...actions]));
      }
    }
  }
  return granted;
}

/** The table access an IAM policy actually gives, in the terms of FunctionAccess. */
const tableAccessOf = (actions: ReadonlySet<string>): TableAccess =>
  [...actions].map((action) => action.replace(/^dynamodb:/, '')).sort() as TableAccess;

describe('ServiceStack (dev)', () => {
  let stack: ServiceStack;
  let template: Template;
  let functions: Record<string, Resource>;
  let logGroups: Record<string, Resource>;
  const env = (fn: ApiFunction | undefined) => functions[logicalId(fn!.function)]?.Properties.Environment.Variables;

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
    functions = serviceFunctions(template);
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
    expect(Object.keys(functions)).toHaveLength(routes.length + stepCount + scheduleNames.length + Object.keys(eventFunctions).length);
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
      expect(fn.Properties.Environment.Variables).toMatchObject({ STAGE: 'dev' });
      // Source maps are not loaded at run time: they cost every cold start (docs/benchmarks.md).
      expect(fn.Properties.Environment.Variables).not.toHaveProperty('NODE_OPTIONS');
      expect(fn.Properties.Environment.Variables).not.toHaveProperty('DYNAMODB_ENDPOINT');
      expect(fn.Properties.Environment.Variables).not.toHaveProperty('SFN_ENDPOINT');
    }
  });

  it('tells a function only the tables and workflows it may touch', () => {
    const listInstances = env(stack.api.functions.ListInstances);
    // Its sessions table: the console's Instances page lists with the session.
    const tableVariables = Object.keys(listInstances).filter((name) => name.endsWith('_TABLE'));
    expect(tableVariables.sort()).toEqual(['ACCOUNTS_TABLE', 'API_KEYS_TABLE', 'COUNTERS_TABLE', 'INSTANCES_TABLE', 'SESSIONS_TABLE']);
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

  it('projects into each index only the attributes its queries read, and never a secret', () => {
    const projections = Object.fromEntries(
      tableNames.flatMap((name) => {
        const table = template.findResources('AWS::DynamoDB::GlobalTable')[logicalId(stack.tables[name])] as Resource;
        return ((table.Properties.GlobalSecondaryIndexes ?? []) as { IndexName: string; Projection: unknown }[]).map((index) => [
          `${name}.${index.IndexName}`,
          index.Projection,
        ]);
      }),
    );

    expect(projections).toEqual({
      'accounts.review_by_shard': { ProjectionType: 'KEYS_ONLY' },
      'apiKeys.by_account': {
        ProjectionType: 'INCLUDE',
        NonKeyAttributes: ['name', 'key_prefix', 'is_active', 'created_at', 'last_used_at', 'revoked_at'],
      },
      'instances.live_by_account': { ProjectionType: 'KEYS_ONLY' },
      'instances.live_listing_by_account': { ProjectionType: 'INCLUDE', NonKeyAttributes: ['status', 'project_name', 'labels'] },
      'instances.meter_by_shard': { ProjectionType: 'KEYS_ONLY' },
      'instances.inflight_by_shard': { ProjectionType: 'KEYS_ONLY' },
      'instances.sweep_by_shard': { ProjectionType: 'KEYS_ONLY' },
      'jobs.by_instance': { ProjectionType: 'INCLUDE', NonKeyAttributes: ['type', 'account_id', 'status', 'finished_at', 'error'] },
      'jobs.running_by_shard': { ProjectionType: 'KEYS_ONLY' },
      'webhooks.by_account': {
        ProjectionType: 'INCLUDE',
        NonKeyAttributes: ['url', 'events', 'failing_since', 'disabled_at', 'disabled_reason'],
      },
      'sessions.by_account': { ProjectionType: 'KEYS_ONLY' },
      'topUps.by_account': { ProjectionType: 'KEYS_ONLY' },
      'topUps.open_since': { ProjectionType: 'KEYS_ONLY' },
    });
  });

  it("keeps a customer-managed, yearly rotated KMS key for customers' secrets and tells its users its ARN", () => {
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true, RotationPeriodInDays: 365 });
    const keyRef = { 'Fn::GetAtt': [logicalId(stack.secretsKey), 'Arn'] };
    expect(env(stack.api.functions.GetInstance)).toMatchObject({ SECRETS_KMS_KEY_ARN: keyRef });
    expect(env(stack.workflows.provision.steps.CreateServerFunctionArn)).toMatchObject({ SECRETS_KMS_KEY_ARN: keyRef });
    expect(env(stack.api.functions.GetJob)).not.toHaveProperty('SECRETS_KMS_KEY_ARN');
  });

  it('runs provisioning as a STANDARD, fully logged, traced state machine', () => {
    const provision = stack.workflows.provision;
    const stateMachine = template.findResources('AWS::StepFunctions::StateMachine')[logicalId(provision.stateMachine)];
    expect(stateMachine?.Properties).toMatchObject({
      StateMachineType: 'STANDARD',
      LoggingConfiguration: { Level: 'ALL' },
      TracingConfiguration: { Enabled: true },
    });
  });

  describe('least privilege, derived from the IAM policy of each function', () => {
    let declared: DeclaredFunction[];
    const statementsOf = (fn: ApiFunction) => policyStatements(template, logicalId(fn.role));
    const tableNameById = () => new Map<string, string>(tableNames.map((name) => [logicalId(stack.tables[name]), name]));
    const stateMachineNameById = () =>
      new Map<string, string>(workflowNames.map((name) => [logicalId(stack.workflows[name].stateMachine), name]));
    /** The names `ids` stand for; an id that is not one of `known` stays as it is, so that it fails the comparison. */
    const namesOf = (ids: Iterable<string>, known: Map<string, string>) => [...ids].map((id) => known.get(id) ?? id).sort();

    beforeAll(() => {
      declared = declaredFunctions(stack);
    });

    it('covers every function of the stack', () => {
      expect(declared.map(({ fn }) => logicalId(fn.function)).sort()).toEqual(Object.keys(functions).sort());
    });

    it('gives every function exactly the tables its access names, reading and writing only as declared', () => {
      const tableNameOf = tableNameById();
      for (const { name, fn, access } of declared) {
        const granted = actionsByResource(statementsOf(fn), 'dynamodb:');
        // Index ARNs fold into their table, so the levels are compared per table; stream reads are checked apart.
        const byTable = new Map<string, Set<string>>();
        for (const [id, allActions] of granted) {
          const actions = new Set([...allActions].filter((action) => !DYNAMODB_STREAM_ACTIONS.includes(action)));
          if (actions.size === 0) continue;
          const table = tableNameOf.get(id) ?? id;
          byTable.set(table, new Set([...(byTable.get(table) ?? []), ...actions]));
        }
        const derived = Object.fromEntries([...byTable].map(([table, actions]) => [table, tableAccessOf(actions)]));
        const declaredTables = Object.fromEntries(
          Object.entries(access.tables ?? {}).map(([table, actions]) => [table, [...actions].sort()]),
        );
        expect(derived, name).toEqual(declaredTables);
      }
    });

    it('gives no function dynamodb:Scan, nor any function batch writes, nor stream reads but the stream function', () => {
      for (const { name, fn } of declared) {
        const actions = statementsOf(fn).flatMap((statement) => asList(statement.Action));
        if (routes.some((route) => route.name === name)) expect(actions, name).not.toContain('dynamodb:Scan');
        expect(actions, name).not.toContain('dynamodb:BatchWriteItem');
        if (name !== 'publishChanges')
          expect(
            actions.filter((action) => DYNAMODB_STREAM_ACTIONS.includes(action)),
            name,
          ).toEqual([]);
      }
      const scanners = declared.filter(({ fn }) =>
        statementsOf(fn).some((statement) => asList(statement.Action).includes('dynamodb:Scan')),
      );
      // The periodic jobs read sparse indexes; nothing scans a table.
      expect(scanners.map(({ name }) => name)).toEqual([]);
    });

    it("lets exactly the functions that seal or open customers' secrets use the secrets key, for exactly that", () => {
      const keyId = logicalId(stack.secretsKey);
      for (const { name, fn, access } of declared) {
        const granted = [...(actionsByResource(statementsOf(fn), 'kms:').get(keyId) ?? [])].sort();
        const expected = [...(access.secrets ?? [])].map((use) => (use === 'seal' ? 'kms:GenerateDataKey' : 'kms:Decrypt')).sort();
        expect(granted, name).toEqual(expected);
      }
      const openers = declared.filter(({ access }) => access.secrets?.includes('open')).map(({ name }) => name);
      expect(openers.sort()).toEqual([
        'CreateInstance',
        'GetInstance',
        'ListInstances',
        'Mcp',
        'UpdateInstance',
        'deliverWebhooks',
        'provision.CreateServerFunctionArn',
      ]);
    });

    it('lets ListInstances write only the Bearer check bookkeeping, start nothing and read no secret', () => {
      const statements = statementsOf(stack.api.functions.ListInstances!);
      const tableNameOf = tableNameById();
      const written = [...actionsByResource(statements, 'dynamodb:')]
        .filter(([, actions]) => DYNAMODB_WRITE_ACTIONS.some((action) => actions.has(action)))
        .map(([id]) => tableNameOf.get(id) ?? id);
      // Every Bearer route stamps its key's last use and counts its rate-limit windows; nothing else.
      const bookkeeping = Object.entries(authAccess.bearer.tables ?? {}).filter(([, actions]) =>
        actions.some((action) => action !== 'GetItem'),
      );
      expect([...new Set(written)].sort()).toEqual(bookkeeping.map(([table]) => table).sort());
      expect(written).not.toContain('instances');
      const actions = statements.flatMap((statement) => asList(statement.Action));
      expect(actions.filter((action) => /^(states|secretsmanager):/.test(action))).toEqual([]);
    });

    it('keeps the key functions away from the instances table', () => {
      const instancesTableId = logicalId(stack.tables.instances);
      for (const name of ['ListKeys', 'CreateKey', 'RevokeKey']) {
        const statements = statementsOf(stack.api.functions[name]!);
        const touched = statements.flatMap((statement) => referencedIds(statement.Resource));
        expect(touched, name).not.toContain(instancesTableId);
      }
    });

    it('lets exactly the functions with upstream access read the upstream token, and those with payments the payment keys', () => {
      const upstreamId = logicalId(stack.upstreamToken);
      const paymentsId = logicalId(stack.paymentsSecret);
      for (const { name, fn, access } of declared) {
        const secrets = [...actionsByResource(statementsOf(fn), 'secretsmanager:').keys()].sort();
        const expected = [...(access.upstream ? [upstreamId] : []), ...(access.payments ? [paymentsId] : [])].sort();
        expect(secrets, name).toEqual(expected);
      }
    });

    it('lets a function start and stop executions of exactly the state machines it declares', () => {
      const stateMachineNameOf = stateMachineNameById();
      for (const { name, fn, access } of declared) {
        const statements = statementsOf(fn);
        const starts = actionsByResource(statements, 'states:StartExecution');
        const stops = actionsByResource(statements, 'states:StopExecution');
        expect(namesOf(starts.keys(), stateMachineNameOf), name).toEqual([...(access.startsWorkflows ?? [])].sort());
        expect(namesOf(stops.keys(), stateMachineNameOf), name).toEqual([...(access.stopsWorkflows ?? [])].sort());
      }
    });

    it('gives no other role states:StartExecution', () => {
      const starters = Object.values(template.findResources('AWS::IAM::Policy')).filter((policy) =>
        (policy.Properties.PolicyDocument.Statement as Statement[]).some((statement) =>
          asList(statement.Action).includes('states:StartExecution'),
        ),
      );
      const declaredStarters = declared.filter(({ access }) => access.startsWorkflows?.length);
      expect(starters.flatMap((policy) => referencedIds(policy.Properties.Roles)).sort()).toEqual(
        declaredStarters.map(({ fn }) => logicalId(fn.role)).sort(),
      );
    });
  });

  it('invokes each scheduled function at its rate through a role limited to that function', () => {
    for (const name of scheduleNames) {
      const scheduled = stack.scheduled[name];
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: schedules[name].everyMinutes === 1 ? 'rate(1 minute)' : `rate(${schedules[name].everyMinutes} minutes)`,
        Target: Match.objectLike({ Arn: { Ref: logicalId(scheduled.function.alias) } }),
      });
    }
  });

  it('never grants dynamodb:* or other service-wide actions', () => {
    const actions = policyStatements(template).flatMap((statement) => asList(statement.Action));
    expect(actions.filter((action) => action.endsWith(':*') || action === '*')).toEqual([]);
  });

  it.each([
    ['AwsSolutions', () => new AwsSolutionsChecks()],
    ['Serverless', () => new ServerlessChecks()],
  ])('passes cdk-nag %s with no unacknowledged error or warning', (_pack, pack) => {
    const { violations } = pack().validateScope(stack);
    expect(violations.filter((violation) => violation.severity === 'error').map((v) => v.ruleName)).toEqual([]);
    expect(violations.filter((violation) => violation.severity === 'warning').map((v) => v.ruleName)).toEqual([]);
    // The parent's artifact carries the messages of its nested stacks' constructs too.
    expect(Annotations.fromStack(stack).findError('*', Match.anyValue())).toEqual([]);
    expect(Annotations.fromStack(stack).findWarning('*', Match.anyValue())).toEqual([]);
  });

  it('gives every acknowledged finding a written reason', () => {
    const reasons = stack.node
      .findAll()
      .flatMap((construct) => construct.node.metadata)
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) => Object.entries(entry.data as Record<string, unknown>));
    expect(reasons.map(([id]) => id)).toContainEqual(expect.stringMatching(/AwsSolutions-SNS2$/));
    expect(reasons.map(([id]) => id)).toContainEqual(expect.stringMatching(/Serverless-LambdaDLQ$/));
    for (const [id, reason] of reasons) expect(String(reason).length, id).toBeGreaterThan(40);
  });

  it('synthesizes the same templates again, so a second synth leaves nothing to deploy', () => {
    const again = synthesize('dev').templates;
    const json = (templates: Record<string, Template>) =>
      Object.fromEntries(Object.entries(templates).map(([name, each]) => [name, each.toJSON()]));
    expect(json(again)).toEqual(json(templatesOf(stack)));
  });
});

describe('ServiceStack sizing from context', () => {
  it('passes stage, budgets and pool sizes from context to every function, with stage defaults', () => {
    const sized = synthesize('dev', { ipv4PoolSize: '300', tierCapacity: '40', provisionTimeoutSeconds: '900' }).template;
    const defaults = synthesize('dev').template;
    const environmentOf = (template: Template) =>
      Object.values(serviceFunctions(template)).map((fn) => fn.Properties.Environment.Variables as Record<string, string>);

    for (const variables of environmentOf(sized)) {
      expect(variables).toMatchObject({
        STAGE: 'dev',
        DEFAULT_IPV4_POOL_SIZE: '300',
        DEFAULT_TIER_CAPACITY: '40',
        PROVISION_TIMEOUT_SECONDS: '900',
      });
    }
    for (const variables of environmentOf(defaults)) {
      expect(variables).toMatchObject({ DEFAULT_IPV4_POOL_SIZE: '50', DEFAULT_TIER_CAPACITY: '10', PROVISION_TIMEOUT_SECONDS: '600' });
    }
    expect(() => synthesize('dev', { tierCapacity: 'many' })).toThrow('context tierCapacity must be a positive integer');
    // Three synths of the whole service: on a busy machine that is more than the default minute.
  }, 180_000);
});

describe('ServiceStack (prod)', () => {
  let stack: ServiceStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = synthesize('prod', PROD_CONTEXT));
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
    expect(() => synthesize('prod', { account: PROD_CONTEXT.account, region: PROD_CONTEXT.region })).toThrow(/instanceDomainSuffix/);
  });

  it.each([
    ['an account', { region: 'eu-west-1' }, 'context account is required (-c account=...)'],
    ['a region', { account: '111111111111' }, 'context region is required (-c region=...)'],
    ['a well-formed account', { account: 'prod', region: 'eu-west-1' }, 'context account must be a 12-digit AWS account id'],
  ])('refuses to synthesize without %s in context', (_what, context, message) => {
    expect(() => synthesize('prod', { instanceDomainSuffix: 'vps.example.com', ...context })).toThrow(message);
  });

  it('is bound to the account and region from context, which the template never hard-codes', () => {
    expect([stack.account, stack.region]).toEqual(['111111111111', 'eu-west-1']);
    // The one exception: the edge's web ACL, which CloudFront requires in us-east-1, read from its stack's output.
    const webAclLookup = '"Fn::GetStackOutput":{"StackName":"VpsService-prod-EdgeAcl","Region":"us-east-1"';
    expect(JSON.stringify(template.toJSON()).replaceAll(webAclLookup, '')).not.toContain('us-east-1');
  });

  it('passes both cdk-nag packs bound to its region, as `cdk synth` binds it, with literal ARNs where dev has tokens', () => {
    for (const pack of [new AwsSolutionsChecks(), new ServerlessChecks()]) {
      const { violations } = pack.validateScope(stack);
      expect(
        violations.map((violation) => `${violation.ruleName} ${violation.violatingResources.map((r) => r.constructPath).join(', ')}`),
      ).toEqual([]);
    }
  });

  it('has termination protection, which dev has not', () => {
    expect(stack.terminationProtection).toBe(true);
    expect(synthesize('dev').stack.terminationProtection).toBe(false);
  });
});

/** One real bundle of ListInstances; asset hashes are cached per process, so the cache is cleared to bundle again. */
function synthesizeBundle() {
  AssetStaging.clearAssetHashCache();
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
  return app.synth();
}

describe('ApiFunction bundling', () => {
  it('bundles a handler offline with the local esbuild into a loadable ES module', () => {
    const assembly = synthesizeBundle();
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

  it('bundles the same handler into the same asset twice, so `cdk diff` after a new synth is clean', () => {
    const assemblies = [synthesizeBundle(), synthesizeBundle()];
    try {
      const [first, second] = assemblies.map((assembly) => assembly.getStackArtifact('BundlingProbe').template);
      expect(second).toEqual(first);
    } finally {
      for (const assembly of assemblies) rmSync(assembly.directory, { recursive: true, force: true });
    }
  }, 30_000);
});
