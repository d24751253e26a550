import { CfnOutput, RemovalPolicy, Stack, Token, Validations, type Environment, type StackProps } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { outputNames, pascal } from './outputs';
import { routeAuthAccess, routes } from '../shared/routes';
import { mcpRoute } from '../shared/contracts/mcp';
import { tableNames, tables, type TableName } from '../shared/tables';
import { workflowNames, type WorkflowName } from '../shared/workflow-names';
import { workflows } from './workflows';
import { AlarmTopic } from './constructs/alarm-topic';
import { mergeAccess } from '../shared/access';
import type { ApiFunction, ServiceContext } from './constructs/api-function';
import { ApiStack } from './constructs/api-stack';
import { edgeFirewallEnabled, type EdgeFirewall } from './constructs/edge-firewall';
import { Backups } from './constructs/backups';
import type { GradualDeployments } from './constructs/gradual-deployments';
import type { HttpApi } from './constructs/http-api';
import type { ConsoleSite } from './constructs/console-site';
import type { ApiRollbackAlarms, Operations } from './constructs/operations';
import { OperationsStack } from './constructs/operations-stack';
import { ServiceTable } from './constructs/table';
import { SecretsKey } from './constructs/secrets-key';
import { Workflow } from './constructs/workflow';
import { ScheduledFunction } from './constructs/scheduled-function';
import { ServiceEvents } from './constructs/events';
import { scheduleNames, schedules, type ScheduleName } from './schedules';

const STAGES = ['dev', 'prod'] as const;
export type Stage = (typeof STAGES)[number];

/** The `stage` context value (`-c stage=dev|prod`), dev when unset. */
export function stageOf(scope: Construct): Stage {
  const stage = String(scope.node.tryGetContext('stage') ?? 'dev');
  const known = STAGES.find((candidate) => candidate === stage);
  if (!known) throw new Error(`stage must be one of ${STAGES.join(', ')}; got ${stage}`);
  return known;
}

interface ServiceConfig {
  readonly stage: Stage;
  readonly instanceDomainSuffix: string;
  readonly upstreamBaseUrl: string;
  readonly provisionTimeoutSeconds: number;
  /** Sizing: the IPv4 pool and each flavor's tier capacity until an operator sets them (ops CLI). */
  readonly ipv4PoolSize: number;
  readonly tierCapacity: number;
  /** Comma-separated origins of the service's web pages when they live on another host than the API. */
  readonly trustedOrigins: string;
  /** The console's e-mail sender; SES must have it or its domain verified. Default `no-reply@<instance domain>`. */
  readonly mailFrom: string;
  /** Subscribed to the alarm topic when given. */
  readonly alarmEmail: string | undefined;
  /** A backup vault in another region or account that receives a copy of every recovery point. */
  readonly backupCopyVaultArn: string | undefined;
}

function contextValue(scope: Construct, key: string, fallback: string | undefined): string {
  const value = scope.node.tryGetContext(key) ?? fallback;
  if (value === undefined || value === '') throw new Error(`context ${key} is required (-c ${key}=...)`);
  return String(value);
}

function optionalContext(scope: Construct, key: string): string | undefined {
  const value = scope.node.tryGetContext(key);
  return value === undefined || value === '' ? undefined : String(value);
}

function positiveIntegerContext(scope: Construct, key: string, fallback: string): number {
  const value = Number(contextValue(scope, key, fallback));
  if (!Number.isInteger(value) || value <= 0) throw new Error(`context ${key} must be a positive integer`);
  return value;
}

function configFromContext(scope: Construct): ServiceConfig {
  const stage = stageOf(scope);
  const instanceDomainSuffix = contextValue(scope, 'instanceDomainSuffix', stage === 'dev' ? 'vps.example.net' : undefined);
  return {
    stage,
    // Only dev may fall back to the placeholder domain; a real stage must name its own.
    instanceDomainSuffix,
    upstreamBaseUrl: contextValue(scope, 'upstreamBaseUrl', 'https://api.digitalocean.com'),
    provisionTimeoutSeconds: positiveIntegerContext(scope, 'provisionTimeoutSeconds', '600'),
    ipv4PoolSize: positiveIntegerContext(scope, 'ipv4PoolSize', stage === 'prod' ? '1000' : '50'),
    tierCapacity: positiveIntegerContext(scope, 'tierCapacity', stage === 'prod' ? '200' : '10'),
    trustedOrigins: String(scope.node.tryGetContext('trustedOrigins') ?? ''),
    mailFrom: contextValue(scope, 'mailFrom', `no-reply@${instanceDomainSuffix}`),
    alarmEmail: optionalContext(scope, 'alarmEmail'),
    backupCopyVaultArn: optionalContext(scope, 'backupCopyVaultArn'),
  };
}

/** The steps give up on a server at the provisioning timeout; the execution timeout must not cut that short. */
function checkProvisionTimeout({ provisionTimeoutSeconds }: ServiceConfig): void {
  const limit = workflows.provision.timeoutSeconds;
  if (provisionTimeoutSeconds * 2 > limit) {
    throw new Error(`context provisionTimeoutSeconds must be at most ${limit / 2} (half the provision execution timeout)`);
  }
}

/**
 * Where the stage deploys. Prod is bound to the account and region named in context (`-c account=… -c region=…`),
 * so that credentials for another account or a shell's default region can never deploy it elsewhere; dev deploys
 * wherever the shell's credentials point.
 */
export function deploymentEnvironment(scope: Construct): Environment {
  if (stageOf(scope) !== 'prod') return { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
  const account = contextValue(scope, 'account', undefined);
  if (!/^\d{12}$/.test(account)) throw new Error('context account must be a 12-digit AWS account id');
  return { account, region: contextValue(scope, 'region', undefined) };
}

/**
 * The whole service. The parent stack holds what keeps state or runs the lifecycles: tables, keys, the upstream
 * token, backups, workflows, scheduled jobs, events and the alarm topic. Two nested stacks hold what grows with
 * every route and every alarm, so that no template nears CloudFormation's 500-resource limit: the HTTP API (routes,
 * functions, gradual deployments, and the console's CloudFront origin in front of it) and operations (dashboard,
 * alarms and synthetic canaries).
 */
export class ServiceStack extends Stack {
  readonly tables: Readonly<Record<TableName, ServiceTable>>;
  readonly workflows: Readonly<Record<WorkflowName, Workflow>>;
  readonly upstreamToken: secretsmanager.Secret;
  readonly paymentsSecret: secretsmanager.Secret;
  readonly secretsKey: SecretsKey;
  /** The scheduled jobs that are functions. */
  readonly scheduled: Readonly<Record<ScheduleName, ScheduledFunction>>;
  readonly events: ServiceEvents;
  readonly backups: Backups;
  readonly alarmTopic: AlarmTopic;
  /** The nested stack of the HTTP API and the console in front of it. */
  readonly apiStack: ApiStack;
  /** CloudFront with the web ACL in front of the API and the console (prod, or `-c edge=true`). */
  readonly edge: EdgeFirewall | undefined;
  readonly api: HttpApi;
  readonly console: ConsoleSite;
  readonly apiDeployments: GradualDeployments;
  readonly apiRollbackAlarms: ApiRollbackAlarms;
  /** The nested stack of the dashboard and alarms. */
  readonly operationsStack: OperationsStack;
  readonly operations: Operations;

  constructor(scope: Construct, id: string, props?: StackProps) {
    const stage = stageOf(scope);
    // Prod can be neither deleted by accident nor synthesized without its account and region.
    super(scope, id, { ...props, terminationProtection: stage === 'prod' });
    if (stage === 'prod' && (Token.isUnresolved(this.account) || Token.isUnresolved(this.region))) {
      throw new Error('prod is bound to an account and a region: -c account=<id> -c region=<region>');
    }
    const config = configFromContext(this);
    checkProvisionTimeout(config);
    const retain = config.stage !== 'dev';
    const removalPolicy = retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.upstreamToken = this.upstreamTokenSecret(removalPolicy);
    this.paymentsSecret = this.operatorSecret(
      'PaymentsSecret',
      'Stripe keys, put by the operator as {"secret_key": "sk_live_…", "webhook_secret": "whsec_…"}; the stack never sets or generates its value',
      'Third-party keys issued by the payment provider (Stripe): rolled in its dashboard and stored here by the operator.',
      removalPolicy,
    );
    this.secretsKey = new SecretsKey(this, 'SecretsKey', { removalPolicy });

    this.tables = Object.fromEntries(
      tableNames.map((name) => [name, new ServiceTable(this, `${pascal(name)}Table`, { definition: tables[name], retain })]),
    ) as Record<TableName, ServiceTable>;
    this.backups = new Backups(this, 'Backups', {
      tables: [this.tables.accounts, this.tables.ledger, this.tables.instances],
      ledger: this.tables.ledger,
      copyVaultArn: config.backupCopyVaultArn,
      retain,
    });

    const service: ServiceContext = {
      stage: config.stage,
      logs: { retention: retain ? logs.RetentionDays.ONE_YEAR : logs.RetentionDays.ONE_MONTH, removalPolicy },
      tables: this.tables,
      stateMachines: {},
      upstream: { baseUrl: config.upstreamBaseUrl, tokenSecret: this.upstreamToken },
      payments: { secret: this.paymentsSecret },
      secretsKey: this.secretsKey,
      environment: {
        INSTANCE_DOMAIN_SUFFIX: config.instanceDomainSuffix,
        PROVISION_TIMEOUT_SECONDS: String(config.provisionTimeoutSeconds),
        DEFAULT_IPV4_POOL_SIZE: String(config.ipv4PoolSize),
        DEFAULT_TIER_CAPACITY: String(config.tierCapacity),
        TRUSTED_ORIGINS: config.trustedOrigins,
      },
      mail: {
        from: config.mailFrom,
        identityArn: this.formatArn({
          service: 'ses',
          resource: 'identity',
          resourceName: config.mailFrom.split('@')[1] ?? config.mailFrom,
        }),
      },
    };

    // In `workflowNames` order, each workflow's steps can reach the state machines made before it (delete stops
    // the others).
    const built: Partial<Record<WorkflowName, Workflow>> = {};
    for (const name of workflowNames) {
      const stateMachines = Object.fromEntries(Object.entries(built).map(([other, workflow]) => [other, workflow.stateMachine]));
      built[name] = new Workflow(this, `${pascal(name)}Workflow`, {
        definition: workflows[name],
        service: { ...service, stateMachines },
      });
    }
    this.workflows = built as Record<WorkflowName, Workflow>;

    const allStateMachines = Object.fromEntries(workflowNames.map((name) => [name, this.workflows[name].stateMachine]));
    this.scheduled = Object.fromEntries(
      scheduleNames.map((name) => [
        name,
        new ScheduledFunction(this, `${pascal(name)}Schedule`, {
          definition: schedules[name],
          service: { ...service, stateMachines: allStateMachines },
        }),
      ]),
    ) as Record<ScheduleName, ScheduledFunction>;

    this.events = new ServiceEvents(this, 'Events', {
      stage: config.stage,
      service,
      sources: { instances: this.tables.instances, jobs: this.tables.jobs, webhooks: this.tables.webhooks, accounts: this.tables.accounts },
      removalPolicy,
    });

    this.alarmTopic = new AlarmTopic(this, 'AlarmTopic', { stage: config.stage, email: config.alarmEmail });
    this.apiStack = new ApiStack(this, 'ApiStack', {
      stage: config.stage,
      routes: routes.map((route) => ({ ...route, access: mergeAccess(route.access, routeAuthAccess(route)) })),
      service: {
        ...service,
        stateMachines: allStateMachines,
        webhookQueue: this.events.deliveryQueue,
        authMailQueue: this.events.authMailQueue,
      },
      alarmTopic: this.alarmTopic.topic,
      trustedOrigins: config.trustedOrigins,
      removalPolicy,
      edge: edgeFirewallEnabled(this, config.stage),
    });
    this.edge = this.apiStack.edge;
    this.api = this.apiStack.httpApi;
    this.console = this.apiStack.console;
    this.apiDeployments = this.apiStack.deployments;
    this.apiRollbackAlarms = this.apiStack.rollbackAlarms;

    this.operationsStack = this.addOperations(config.stage, removalPolicy);
    this.operations = this.operationsStack.operations;
    this.operations.alarms.push(
      ...this.events.addOperations(this.operations, config.stage, this.operations.dashboard, this.alarmTopic.topic),
    );
    this.addOutputs(config.upstreamBaseUrl);
  }

  /** The dashboard and alarms over every function, in one group per part of the service, and every workflow. */
  private addOperations(stage: Stage, removalPolicy: RemovalPolicy): OperationsStack {
    const functionsOf = (group: Readonly<Record<string, ApiFunction>>) => Object.values(group).map((fn) => fn.function);
    const mcp = this.api.functions[mcpRoute.name]!.function;
    const stepGroups = workflowNames.map((name) => [`${pascal(name)}Steps`, functionsOf(this.workflows[name].steps)]);
    return new OperationsStack(this, 'OperationsStack', {
      stage,
      httpStage: this.api.stage,
      functionGroups: {
        Api: functionsOf(this.api.functions).filter((fn) => fn !== mcp),
        // Its own errors, throttles and duration alarms: its requests wait on servers, unlike the routes'.
        Mcp: [mcp],
        ...Object.fromEntries(stepGroups),
        Scheduled: Object.values(this.scheduled).map((scheduled) => scheduled.function.function),
        Events: Object.values(this.events.functions).map((fn) => fn.function),
      },
      mcpFunction: mcp,
      stateMachines: Object.fromEntries(workflowNames.map((name) => [pascal(name), this.workflows[name].stateMachine])),
      scheduledJobs: Object.fromEntries(
        scheduleNames.map((name) => [
          name,
          { function: this.scheduled[name].function.function, everyMinutes: schedules[name].everyMinutes },
        ]),
      ),
      tables: this.tables,
      accessLogs: this.api.accessLogs,
      alarmTopic: this.alarmTopic.topic,
      otherAlarms: this.apiRollbackAlarms.alarms,
      // Behind the edge the API answers only what came through it: the canaries call it as customers do.
      apiUrl: this.edge?.url ?? this.api.url,
      removalPolicy,
    });
  }

  /**
   * Created by the stack, so its exact ARN (no name-suffix wildcard) goes into the grants, but created empty: the
   * operator puts the token (`aws secretsmanager put-secret-value`), and no template change can ever make
   * CloudFormation generate a value over it, as a generator block would on any change to it.
   */
  private upstreamTokenSecret(removalPolicy: RemovalPolicy): secretsmanager.Secret {
    return this.operatorSecret(
      'UpstreamToken',
      'Upstream compute API token, put by the operator; the stack never sets or generates its value',
      'Third-party API token issued by the upstream provider: it is rotated there and stored here by the operator.',
      removalPolicy,
    );
  }

  /** A secret the operator puts; see upstreamTokenSecret. */
  private operatorSecret(id: string, description: string, rotation: string, removalPolicy: RemovalPolicy): secretsmanager.Secret {
    const secret = new secretsmanager.Secret(this, id, { description, removalPolicy });
    // Without a generator and without a value, CloudFormation creates the secret with no value at all.
    (secret.node.defaultChild as secretsmanager.CfnSecret).addPropertyDeletionOverride('GenerateSecretString');
    Validations.of(secret).acknowledge({ id: 'AwsSolutions-SMG4', reason: rotation });
    return secret;
  }

  private addOutputs(upstreamBaseUrl: string): void {
    new CfnOutput(this, outputNames.apiUrl, { value: this.api.url });
    new CfnOutput(this, outputNames.consoleUrl, { value: this.console.url });
    if (this.edge)
      new CfnOutput(this, 'EdgeUrl', { value: this.edge.url, description: 'The API behind the edge firewall: the URL customers call' });
    new CfnOutput(this, outputNames.upstreamTokenSecretArn, { value: this.upstreamToken.secretArn });
    new CfnOutput(this, outputNames.upstreamBaseUrl, { value: upstreamBaseUrl });
    new CfnOutput(this, 'PaymentsSecretArn', {
      value: this.paymentsSecret.secretArn,
      description: 'Put the Stripe secret key and webhook signing secret here',
    });
    new CfnOutput(this, outputNames.alarmTopicArn, { value: this.alarmTopic.topic.topicArn });
    new CfnOutput(this, outputNames.dashboardName, { value: this.operations.dashboard.dashboardName });
    new CfnOutput(this, outputNames.eventBusName, { value: this.events.bus.eventBusName });
    new CfnOutput(this, outputNames.apiCheckKeySecretArn, { value: this.operationsStack.canaries.apiCheckKey.secretArn });
    new CfnOutput(this, outputNames.lifecycleCheckKeySecretArn, { value: this.operationsStack.canaries.lifecycleCheckKey.secretArn });
    for (const name of tableNames) {
      new CfnOutput(this, outputNames.table(name), { value: this.tables[name].tableName });
    }
    for (const name of workflowNames) {
      new CfnOutput(this, outputNames.stateMachine(name), { value: this.workflows[name].stateMachine.stateMachineArn });
    }
  }
}
