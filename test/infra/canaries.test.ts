import { runInNewContext } from 'node:vm';
import type { Template } from 'aws-cdk-lib/assertions';
import { CANARY_FLAVOR, canaryScript } from '../../infra/constructs/canaries';
import type { ServiceStack } from '../../infra/stack';
import { catalog } from '../../shared/model/flavors';
import { asList, logicalId, policyStatements, synthesize, type Resource } from './synth';

type Canary = Resource['Properties'];

describe('synthetic canaries', () => {
  let stack: ServiceStack;
  let template: Template;
  let apiCheck: Canary;
  let lifecycleCheck: Canary;
  const canaries = () => stack.operationsStack.canaries;
  const alarmNamed = (name: string) =>
    Object.values(template.findResources('AWS::CloudWatch::Alarm')).find(
      (alarm) => alarm.Properties.AlarmName === `VpsService-dev-${name}`,
    )!.Properties;

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
    const found = template.findResources('AWS::Synthetics::Canary');
    apiCheck = found[logicalId(canaries().apiCheck)]!.Properties;
    lifecycleCheck = found[logicalId(canaries().lifecycleCheck)]!.Properties;
  });

  it('runs two canaries on a Node.js runtime of CloudWatch Synthetics, traced, started at creation', () => {
    expect(Object.keys(template.findResources('AWS::Synthetics::Canary'))).toHaveLength(2);
    for (const canary of [apiCheck, lifecycleCheck]) {
      expect(canary.RuntimeVersion).toMatch(/^syn-nodejs-/);
      expect(canary).toMatchObject({
        StartCanaryAfterCreation: true,
        RunConfig: { ActiveTracing: true },
        Code: { Handler: 'index.handler' },
      });
      expect(canary.ArtifactS3Location).toEqual({
        'Fn::Join': ['', ['s3://', { Ref: logicalId(canaries().artifacts) }, `/${canary.Name}`]],
      });
    }
    expect([apiCheck.Name, lifecycleCheck.Name]).toEqual(['vps-dev-api', 'vps-dev-lifecycle']);
  });

  it('lists instances and reads the OpenAPI document every 5 minutes, within a minute', () => {
    expect(apiCheck.Schedule).toMatchObject({ Expression: 'rate(5 minutes)' });
    expect(apiCheck.RunConfig.TimeoutInSeconds).toBe(60);
    expect(apiCheck.Code.Script).toContain('/api/v1/instances');
    expect(apiCheck.Code.Script).toContain('/api/v1/openapi.json');
  });

  it('creates the smallest server, waits for it and deletes it every 6 hours, with both waits inside its timeout', () => {
    expect(lifecycleCheck.Schedule).toMatchObject({ Expression: 'cron(17 0/6 * * ? *)' });
    const variables = lifecycleCheck.RunConfig.EnvironmentVariables;
    const timeout = lifecycleCheck.RunConfig.TimeoutInSeconds;
    expect(timeout).toBe(840);
    expect(Number(variables.ACTIVE_WITHIN_SECONDS) + Number(variables.DELETED_WITHIN_SECONDS)).toBeLessThan(timeout - 60);
    const cheapest = Math.min(...[...catalog.values()].map((plan) => plan.hourly_price));
    expect(variables.CANARY_FLAVOR).toBe(CANARY_FLAVOR);
    expect(catalog.get(CANARY_FLAVOR)?.hourly_price).toBe(cheapest);
    expect(lifecycleCheck.Code.Script).toContain('call("POST", "/api/v1/instances"');
    expect(lifecycleCheck.Code.Script).toMatch(/call\("DELETE", `\/api\/v1\/instances\/\$\{id\d*\}`\)/);
  });

  it('calls the API stage and reads its key from its own secret, which the stack creates empty', () => {
    const stageUrl = {
      'Fn::Join': [
        '',
        ['https://', { Ref: logicalId(stack.api.api) }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, '/'],
      ],
    };
    const secrets = template.findResources('AWS::SecretsManager::Secret');
    for (const [canary, secret] of [
      [apiCheck, canaries().apiCheckKey],
      [lifecycleCheck, canaries().lifecycleCheckKey],
    ] as const) {
      expect(canary.RunConfig.EnvironmentVariables).toMatchObject({ API_URL: stageUrl, CANARY_KEY_SECRET_ARN: { Ref: logicalId(secret) } });
      const properties = secrets[logicalId(secret)]!.Properties;
      expect(properties).not.toHaveProperty('GenerateSecretString');
      expect(properties).not.toHaveProperty('SecretString');
    }
  });

  it('lets each canary read its own key secret and no other', () => {
    for (const [canary, own, other] of [
      [canaries().apiCheck, canaries().apiCheckKey, canaries().lifecycleCheckKey],
      [canaries().lifecycleCheck, canaries().lifecycleCheckKey, canaries().apiCheckKey],
    ] as const) {
      const reads = policyStatements(template, logicalId(canary.role)).filter((statement) =>
        asList(statement.Action).includes('secretsmanager:GetSecretValue'),
      );
      expect(reads.map((statement) => statement.Resource)).toEqual([{ Ref: logicalId(own) }]);
      expect(JSON.stringify(reads)).not.toContain(logicalId(other));
    }
  });

  it('alarms after two failed API checks in a row, or when the checks stop, on the alarm topic', () => {
    const alarm = alarmNamed('CanaryApi');
    expect(alarm).toMatchObject({
      Namespace: 'CloudWatchSynthetics',
      MetricName: 'SuccessPercent',
      Dimensions: [{ Name: 'CanaryName', Value: { Ref: logicalId(canaries().apiCheck) } }],
      Statistic: 'Minimum',
      Period: 300,
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 100,
      EvaluationPeriods: 2,
      DatapointsToAlarm: 2,
      TreatMissingData: 'breaching',
      AlarmActions: [{ Ref: logicalId(stack.alarmTopic.topic) }],
    });
  });

  it('alarms on a failed lifecycle check, or none in 7 hours', () => {
    expect(alarmNamed('CanaryLifecycle')).toMatchObject({
      MetricName: 'SuccessPercent',
      Dimensions: [{ Name: 'CanaryName', Value: { Ref: logicalId(canaries().lifecycleCheck) } }],
      Statistic: 'Minimum',
      Period: 7 * 3600,
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 100,
      TreatMissingData: 'breaching',
    });
  });

  it('keeps run artifacts private, TLS only, for 31 days', () => {
    const bucket = template.findResources('AWS::S3::Bucket')[logicalId(canaries().artifacts)]!.Properties;
    expect(bucket).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      LifecycleConfiguration: { Rules: [expect.objectContaining({ ExpirationInDays: 31, Status: 'Enabled' })] },
    });
  });

  it('names both key secrets in the stack outputs', () => {
    template.hasOutput('ApiCheckKeySecretArn', { Value: { Ref: logicalId(canaries().apiCheckKey) } });
    template.hasOutput('LifecycleCheckKeySecretArn', { Value: { Ref: logicalId(canaries().lifecycleCheckKey) } });
  });

  it.each(['functions/canary/api-check.ts', 'functions/canary/lifecycle-check.ts'])(
    'bundles %s into one CommonJS script exporting handler, the SDK left to the runtime',
    (entry) => {
      const script = canaryScript(entry);
      const module = { exports: {} as Record<string, unknown> };
      const required: string[] = [];
      runInNewContext(script, { module, exports: module.exports, require: (name: string) => (required.push(name), {}) });
      expect(typeof module.exports.handler).toBe('function');
      expect(required).toEqual(['@aws-sdk/client-secrets-manager']);
      expect(canaryScript(entry)).toBe(script);
    },
  );
});
