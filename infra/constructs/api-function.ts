import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, Duration, RemovalPolicy, Stack, Validations, type BundlingOptions, type ILocalBundling } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference';
import { Construct } from 'constructs';
import { mergeAccess, upstreamBudgetAccess, type FunctionAccess, type SecretsAccess, type TableAccess } from '../../shared/access';
import { buildSync } from 'esbuild';
import { esbuildOptionsFor } from '../bundling';
import { DEFAULT_ROUTE_TIMEOUT_SECONDS } from '../../shared/routes';
import { tables as tableDefinitions, type TableName } from '../../shared/tables';
import { workflowEnvVars, type WorkflowName } from '../../shared/workflow-names';

/** Handler entries and definition files are named relative to the repository root. */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const POWERTOOLS_SERVICE_NAME = 'vps-provisioning';

/**
 * A function's code: bundled here, by esbuild with the options the benchmark and the bundle budgets use
 * (infra/bundling.ts), into an entry and the chunks it loads on first use. Its fields are what the CDK keys its cache
 * of bundled assets by, so that no two functions share one.
 */
class FunctionBundling implements ILocalBundling {
  constructor(
    readonly entry: string,
    readonly access: FunctionAccess,
  ) {}

  tryBundle(outputDir: string): boolean {
    buildSync(esbuildOptionsFor(join(REPO_ROOT, this.entry), this.access, outputDir));
    return true;
  }
}

/** Bundled where the CDK app runs, always; the image would serve only where local bundling cannot run. */
const functionBundling = (entry: string, access: FunctionAccess): BundlingOptions => ({
  image: lambda.Runtime.NODEJS_24_X.bundlingImage,
  local: new FunctionBundling(entry, access),
});

/** The alias every invoker but the state machines calls. */
const LIVE_ALIAS = 'live';

/** Retention and removal of the log groups a construct creates. */
interface LogSettings {
  readonly retention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

interface PaymentsSettings {
  /** The provider's API base; unset for Stripe's own. */
  readonly apiBase?: string;
  /** `{"secret_key", "webhook_secret"}`, put by the operator. */
  readonly secret: secretsmanager.ISecret;
}

interface UpstreamSettings {
  readonly baseUrl: string;
  readonly tokenSecret: secretsmanager.ISecret;
}

/** The deployed resources and settings every function of the service is built against. */
export interface ServiceContext {
  /** Passed to functions as STAGE. */
  readonly stage: string;
  readonly logs: LogSettings;
  readonly tables: Readonly<Partial<Record<TableName, dynamodb.ITableV2>>>;
  readonly stateMachines: Readonly<Partial<Record<WorkflowName, sfn.IStateMachine>>>;
  readonly upstream?: UpstreamSettings;
  readonly payments?: PaymentsSettings;
  /** The customer-managed key that wraps the data keys sealing customers' secrets. */
  readonly secretsKey?: kms.IKey;
  /** Non-secret settings every function receives as environment variables. */
  readonly environment?: Readonly<Record<string, string>>;
  readonly webhookQueue?: sqs.IQueue;
  /** Console e-mails waiting for the mail sender. */
  readonly authMailQueue?: sqs.IQueue;
  readonly eventBus?: events.IEventBus;
  /** The sender of the console's e-mail (Amazon SES), for functions that send any. */
  readonly mail?: MailSettings;
}

interface MailSettings {
  /** The From address; SES must have it, or its domain, as a verified identity. */
  readonly from: string;
  /** The SES identity the functions may send as. */
  readonly identityArn: string;
}

export interface ApiFunctionProps {
  /** Handler module, relative to the repository root, exporting `handler`. */
  readonly entry: string;
  /** Everything the function may touch; it is granted exactly this. */
  readonly access: FunctionAccess;
  readonly service: ServiceContext;
  /** @default 512 */
  readonly memorySize?: number;
  /** Sized from the function's worst case where it is declared. @default DEFAULT_ROUTE_TIMEOUT_SECONDS */
  readonly timeout?: Duration;
  /** Keeps the events of asynchronous invocations that failed every attempt (for functions invoked that way). */
  readonly deadLetterQueue?: sqs.IQueue;
}

/** A Node.js 24 / arm64 Lambda function, bundled as ESM, granted exactly its FunctionAccess. */
export class ApiFunction extends Construct {
  readonly function: lambda.Function;
  /**
   * `live`, on the version this deploy published: what the API and the schedules invoke, and what a gradual
   * deployment moves from one version to the next.
   */
  readonly alias: lambda.Alias;
  readonly logGroup: logs.LogGroup;
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: ApiFunctionProps) {
    super(scope, id);
    const { service } = props;
    this.logGroup = new logs.LogGroup(this, 'LogGroup', {
      retention: service.logs.retention,
      removalPolicy: service.logs.removalPolicy,
    });
    // Our own role: the default one carries the AWS-managed basic execution policy (logs on every group).
    this.role = new iam.Role(this, 'Role', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    this.logGroup.grantWrite(this.role);

    this.function = new lambda.Function(this, 'Function', {
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      handler: 'index.handler',
      code: lambda.Code.fromAsset(REPO_ROOT, {
        assetHashType: AssetHashType.OUTPUT,
        bundling: functionBundling(props.entry, props.access),
      }),
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? Duration.seconds(DEFAULT_ROUTE_TIMEOUT_SECONDS),
      tracing: lambda.Tracing.ACTIVE,
      logGroup: this.logGroup,
      role: this.role,
      deadLetterQueue: props.deadLetterQueue,
      // Kept when a deploy publishes the next one: executions that started before it still call this one.
      currentVersionOptions: { removalPolicy: RemovalPolicy.RETAIN },
      environment: {
        ...service.environment,
        POWERTOOLS_SERVICE_NAME,
        STAGE: service.stage,
      },
    });
    acknowledge(this.role, 'Resource::*', 'X-Ray PutTraceSegments/PutTelemetryRecords take no resource ARN.');
    this.grantAccess(props.access, service);
    this.alias = new lambda.Alias(this, 'Live', { aliasName: LIVE_ALIAS, version: this.function.currentVersion });
  }

  private grantAccess(declared: FunctionAccess, service: ServiceContext): void {
    const access = grantedAccess(declared);
    for (const [name, actions] of Object.entries(access.tables ?? {}) as [TableName, TableAccess][]) {
      const table = required(service.tables[name], `table ${name}`, this);
      const grant = table.grant(this.function, ...actions.map((action) => `dynamodb:${action}`));
      this.acknowledgeWildcards(grant, `Covers the GSIs of ${name}, which the function queries.`);
      this.function.addEnvironment(tableDefinitions[name].envVar, table.tableName);
    }
    if (access.secrets?.length) {
      const key = required(service.secretsKey, 'the secrets key', this);
      const kmsActions: Record<SecretsAccess, string> = { seal: 'kms:GenerateDataKey', open: 'kms:Decrypt' };
      key.grant(this.function, ...access.secrets.map((use) => kmsActions[use]));
      this.function.addEnvironment('SECRETS_KMS_KEY_ARN', key.keyArn);
    }
    for (const name of access.startsWorkflows ?? []) {
      const machine = this.wireStateMachine(name, service);
      machine.grantStartExecution(this.function);
      this.grantOnExecutions(machine, name, 'states:DescribeExecution');
    }
    for (const name of access.stopsWorkflows ?? []) {
      this.grantOnExecutions(this.wireStateMachine(name, service), name, 'states:StopExecution');
    }
    if (access.upstream) {
      const upstream = required(service.upstream, 'the upstream settings', this);
      upstream.tokenSecret.grantRead(this.function);
      this.function.addEnvironment('UPSTREAM_BASE_URL', upstream.baseUrl);
      this.function.addEnvironment('UPSTREAM_TOKEN_SECRET_ARN', upstream.tokenSecret.secretArn);
    }
    if (access.payments) {
      const payments = required(service.payments, 'the payment provider settings', this);
      payments.secret.grantRead(this.function);
      this.function.addEnvironment('PAYMENTS_SECRET_ARN', payments.secret.secretArn);
      if (payments.apiBase) this.function.addEnvironment('PAYMENTS_API_BASE', payments.apiBase);
    }
    if (access.webhookQueue) {
      const queue = required(service.webhookQueue, 'the webhook delivery queue', this);
      queue.grantSendMessages(this.function);
      this.function.addEnvironment('WEBHOOK_QUEUE_URL', queue.queueUrl);
    }
    if (access.authMailQueue) {
      const queue = required(service.authMailQueue, 'the console mail queue', this);
      queue.grantSendMessages(this.function);
      this.function.addEnvironment('AUTH_MAIL_QUEUE_URL', queue.queueUrl);
    }
    if (access.publishesEvents) {
      const bus = required(service.eventBus, 'the event bus', this);
      bus.grantPutEventsTo(this.function);
      this.function.addEnvironment('EVENT_BUS_NAME', bus.eventBusName);
    }
    if (access.sendsMail) this.grantMail(service);
  }

  /** SES SendEmail as the one identity, and only with its From address. */
  private grantMail(service: ServiceContext): void {
    const mail = required(service.mail, 'the mail settings', this);
    this.function.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['ses:SendEmail'],
        resources: [mail.identityArn],
        conditions: { StringEquals: { 'ses:FromAddress': mail.from } },
      }),
    );
    this.function.addEnvironment('MAIL_FROM', mail.from);
  }

  /** The state machine, with its ARN passed to the function. */
  private wireStateMachine(name: WorkflowName, service: ServiceContext): sfn.IStateMachine {
    const machine = required(service.stateMachines[name], `state machine ${name}`, this);
    this.function.addEnvironment(workflowEnvVars[name], machine.stateMachineArn);
    return machine;
  }

  private grantOnExecutions(machine: sfn.IStateMachine, name: WorkflowName, action: string): void {
    this.acknowledgeWildcards(
      machine.grantExecution(this.function, action),
      `Execution names are job ids, known only at run time; limited to executions of the ${name} state machine.`,
    );
  }

  /**
   * Acknowledges, by exact cdk-nag finding, each wildcard resource a grant helper produced. The finding names the
   * resource as the function's own template has it, which is known only once references across stacks are settled
   * (in a nested stack a table's ARN is a parameter), so this runs at validation, after they are.
   */
  private acknowledgeWildcards(grant: iam.Grant, reason: string): void {
    this.node.addValidation({
      validate: () => {
        const stack = Stack.of(this);
        const resources = grant.principalStatements.flatMap((statement) => statement.resources);
        const flattened = new Set(resources.map((resource): string => flattenCfnReference(stack.resolve(resource))));
        for (const flat of flattened) {
          if (flat.includes('*')) acknowledge(this.role, `Resource::${flat}`, reason);
        }
        return [];
      },
    });
  }
}

function acknowledge(scope: Construct, finding: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[${finding}]`, reason });
}

function required<T>(value: T | undefined, what: string, scope: Construct): T {
  if (value === undefined) throw new Error(`${scope.node.path} needs ${what}, which this stack does not provide`);
  return value;
}

/** What a function is granted for what it declares: calling the upstream brings the request budget's item with it. */
export function grantedAccess(access: FunctionAccess): FunctionAccess {
  return access.upstream ? mergeAccess(access, { tables: upstreamBudgetAccess }) : access;
}
