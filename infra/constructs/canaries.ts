import { join } from 'node:path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as synthetics from 'aws-cdk-lib/aws-synthetics';
import { Construct } from 'constructs';
import { buildSync } from 'esbuild';
import { catalog } from '../../shared/model/flavors';
import { serviceAlarm } from './alarm-topic';
import { REPO_ROOT } from './api-function';
import { acknowledgeWildcardResources } from './nag';

/** The Node.js runtime of CloudWatch Synthetics the canaries run on (its SDK v3 reads their key secrets). */
const CANARY_RUNTIME = synthetics.Runtime.SYNTHETICS_NODEJS_PUPPETEER_13_0;

/** The API check: often, and quick. */
const API_CHECK_EVERY = Duration.minutes(5);
const API_CHECK_TIMEOUT = Duration.minutes(1);
/**
 * The lifecycle check: a real server for a few minutes, four times a day, at 00:17, 06:17, 12:17 and 18:17 UTC
 * (Synthetics' rate schedules stop at an hour).
 */
const LIFECYCLE_CHECK_EVERY = Duration.hours(6);
const LIFECYCLE_CHECK_SCHEDULE = synthetics.Schedule.cron({ minute: '17', hour: '0/6' });
/** Synthetics' longest run; the two waits below fit in it with room for the calls around them. */
const LIFECYCLE_CHECK_TIMEOUT = Duration.minutes(14);
const ACTIVE_WITHIN = Duration.minutes(8);
const DELETED_WITHIN = Duration.minutes(4);
/** Failed API checks in a row before the alarm fires: one blip is not an outage. */
const API_CHECK_FAILURES_TO_ALARM = 2;
/**
 * The lifecycle check's alarm period: longer than its rate, so that every period holds at least one run whatever
 * the minute the schedule started at.
 */
const LIFECYCLE_ALARM_PERIOD = Duration.hours(7);

/** The smallest orderable flavor, by price: the cheapest server to run for a few minutes. */
export const CANARY_FLAVOR = [...catalog.values()].sort((a, b) => a.hourly_price - b.hourly_price)[0]!.flavor;

/**
 * A canary script and what it imports, bundled into one CommonJS file for Synthetics' inline code (`index.handler`).
 * The SDK stays out: the runtime has it.
 */
export function canaryScript(entry: string): string {
  const { outputFiles } = buildSync({
    absWorkingDir: REPO_ROOT,
    entryPoints: [join(REPO_ROOT, entry)],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['@aws-sdk/*'],
    legalComments: 'none',
  });
  return outputFiles[0]!.text;
}

export interface ServiceCanariesProps {
  /** Canary names start `vps-<stage>-`, alarm names `VpsService-<stage>-`. */
  readonly stage: string;
  /** The API's base URL, as clients call it. */
  readonly apiUrl: string;
  readonly alarmTopic: sns.ITopic;
  /** Of the key secrets and the artifacts bucket. */
  readonly removalPolicy: RemovalPolicy;
}

/**
 * CloudWatch Synthetics canaries that use the service as a customer does, from outside:
 * - every 5 minutes, with a dedicated canary key, list instances and read the OpenAPI document;
 * - every 6 hours, with the key of a dedicated account, create the smallest server, wait until it is active,
 *   delete it and wait until it is gone.
 * Each key lives in a secret that the stack creates empty; the operator puts it. Both canaries alarm.
 */
export class ServiceCanaries extends Construct {
  readonly apiCheck: synthetics.Canary;
  readonly lifecycleCheck: synthetics.Canary;
  /** The key of the canary account that only reads. */
  readonly apiCheckKey: secretsmanager.Secret;
  /** The key of the dedicated account whose servers the lifecycle check creates and deletes. */
  readonly lifecycleCheckKey: secretsmanager.Secret;
  readonly artifacts: s3.Bucket;
  readonly alarms: cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: ServiceCanariesProps) {
    super(scope, id);
    this.artifacts = new s3.Bucket(this, 'Artifacts', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      lifecycleRules: [{ expiration: Duration.days(31) }],
      removalPolicy: props.removalPolicy,
      autoDeleteObjects: props.removalPolicy === RemovalPolicy.DESTROY,
    });
    Validations.of(this.artifacts).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        "Holds only the canaries' own run logs and reports, written by their role and expired after 31 days; nobody else reads or writes it.",
    });
    this.apiCheckKey = this.keySecret(
      'ApiCheckKey',
      'API key of the canary account the 5-minute API check reads with',
      props.removalPolicy,
    );
    this.lifecycleCheckKey = this.keySecret(
      'LifecycleCheckKey',
      'API key of the dedicated account whose servers the 6-hourly lifecycle check creates and deletes',
      props.removalPolicy,
    );

    this.apiCheck = this.canary('ApiCheck', {
      name: `vps-${props.stage}-api`,
      entry: 'functions/canary/api-check.ts',
      schedule: synthetics.Schedule.rate(API_CHECK_EVERY),
      timeout: API_CHECK_TIMEOUT,
      key: this.apiCheckKey,
      environment: { API_URL: props.apiUrl },
    });
    this.lifecycleCheck = this.canary('LifecycleCheck', {
      name: `vps-${props.stage}-lifecycle`,
      entry: 'functions/canary/lifecycle-check.ts',
      schedule: LIFECYCLE_CHECK_SCHEDULE,
      timeout: LIFECYCLE_CHECK_TIMEOUT,
      key: this.lifecycleCheckKey,
      environment: {
        API_URL: props.apiUrl,
        CANARY_FLAVOR,
        ACTIVE_WITHIN_SECONDS: String(ACTIVE_WITHIN.toSeconds()),
        DELETED_WITHIN_SECONDS: String(DELETED_WITHIN.toSeconds()),
      },
    });

    this.alarms = [
      serviceAlarm(this, 'CanaryApi', props.stage, props.alarmTopic, {
        metric: this.apiCheck.metricSuccessPercent({ period: API_CHECK_EVERY, statistic: cloudwatch.Stats.MINIMUM }),
        threshold: 100,
        below: true,
        periods: API_CHECK_FAILURES_TO_ALARM,
        missingDataBreaches: true,
        description:
          `The API canary failed ${API_CHECK_FAILURES_TO_ALARM} runs in a row, or stopped running: listing instances ` +
          "or reading the OpenAPI document with the canary key did not work from outside. Check first: the run's " +
          'log and report in the Synthetics console (which call, which status), then Api5xxRate and the API access log; ' +
          'a 401 means the canary key secret is empty or its key revoked.',
      }),
      serviceAlarm(this, 'CanaryLifecycle', props.stage, props.alarmTopic, {
        metric: this.lifecycleCheck.metricSuccessPercent({ period: LIFECYCLE_ALARM_PERIOD, statistic: cloudwatch.Stats.MINIMUM }),
        threshold: 100,
        below: true,
        missingDataBreaches: true,
        description:
          'The lifecycle canary could not create the smallest server, see it active and delete it (or did not run ' +
          "for 7 hours). Check first: the run's log in the Synthetics console (which step, which status), then " +
          'ExecutionsFailed-Provision and UpstreamErrors; a 402 means the canary account needs a deposit. A server it ' +
          'could not delete is deleted by its next run.',
      }),
    ];
  }

  /** Success percentage of both canaries, for the dashboard. */
  dashboardWidget(): cloudwatch.GraphWidget {
    return new cloudwatch.GraphWidget({
      title: 'Canaries: success (%)',
      left: [
        this.apiCheck.metricSuccessPercent({ period: API_CHECK_EVERY, label: 'API check' }),
        this.lifecycleCheck.metricSuccessPercent({ period: LIFECYCLE_CHECK_EVERY, label: 'Lifecycle check' }),
      ],
      leftYAxis: { min: 0, max: 100 },
      width: 12,
    });
  }

  /** Created empty, like the upstream token: the operator puts the key, and no deploy can overwrite it. */
  private keySecret(id: string, description: string, removalPolicy: RemovalPolicy): secretsmanager.Secret {
    const secret = new secretsmanager.Secret(this, id, { description: `${description}; put by the operator`, removalPolicy });
    (secret.node.defaultChild as secretsmanager.CfnSecret).addPropertyDeletionOverride('GenerateSecretString');
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        "An API key of the service's own canary account, issued by the service and put here by the operator; rotating it is issuing a new key, putting it, and revoking the old one.",
    });
    return secret;
  }

  private canary(
    id: string,
    options: {
      name: string;
      entry: string;
      schedule: synthetics.Schedule;
      timeout: Duration;
      key: secretsmanager.ISecret;
      environment: Record<string, string>;
    },
  ): synthetics.Canary {
    const canary = new synthetics.Canary(this, id, {
      canaryName: options.name,
      runtime: CANARY_RUNTIME,
      test: synthetics.Test.custom({ code: synthetics.Code.fromInline(canaryScript(options.entry)), handler: 'index.handler' }),
      schedule: options.schedule,
      timeout: options.timeout,
      environmentVariables: { ...options.environment, CANARY_KEY_SECRET_ARN: options.key.secretArn },
      artifactsBucketLocation: { bucket: this.artifacts, prefix: options.name },
      activeTracing: true,
      successRetentionPeriod: Duration.days(31),
      failureRetentionPeriod: Duration.days(31),
      provisionedResourceCleanup: true,
    });
    options.key.grantRead(canary.role);
    this.acknowledgeRole(canary);
    return canary;
  }

  /** The role CDK gives a canary: its wildcards are the ones Synthetics itself needs, acknowledged as they read. */
  private acknowledgeRole(canary: synthetics.Canary): void {
    const role = canary.role;
    const reason =
      'What every Synthetics canary needs: s3:ListAllMyBuckets, and cloudwatch:PutMetricData limited by condition to the ' +
      'CloudWatchSynthetics namespace, which take no resource ARN; X-Ray tracing likewise.';
    Validations.of(role).acknowledge({ id: 'AwsSolutions-IAM5[Resource::*]', reason }, { id: 'Serverless-LambdaStarPermissions', reason });
    acknowledgeWildcardResources(
      role,
      "The canary's run artifacts (objects under its prefix in the artifacts bucket) and its own log groups " +
        '(/aws/lambda/cwsyn-<name>-*, named by Synthetics when it creates the canary function).',
    );
  }
}
