import type { Template } from 'aws-cdk-lib/assertions';
import { routes } from '../../shared/routes';
import type { ServiceStack } from '../../infra/stack';
import { tableNames } from '../../shared/tables';
import { PROD_CONTEXT, logicalId, synthesize } from './synth';
import { schedules } from '../../infra/schedules';

/** CloudFormation's limits per template. */
const MAX_RESOURCES = 500;
const MAX_PARAMETERS = 200;
const MAX_OUTPUTS = 200;
/** Room to spare: the parent, and every nested stack, stays this far under the limit. */
const RESOURCE_BUDGET = 400;

type TemplateJson = {
  Resources: Record<string, { Type: string }>;
  Parameters?: Record<string, unknown>;
  Outputs?: Record<string, unknown>;
};

const json = (template: Template) => template.toJSON() as TemplateJson;
const count = (template: Template) => Object.keys(json(template).Resources).length;
const idsOfType = (template: Template, type: string) =>
  Object.entries(json(template).Resources)
    .filter(([, resource]) => resource.Type === type)
    .map(([id]) => id)
    .sort();

/** Every logical id a value refers to with Ref, Fn::GetAtt or a `${…}` in Fn::Sub. */
function references(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(references);
  if (value === null || typeof value !== 'object') return [];
  const object = value as Record<string, unknown>;
  const own: string[] = [];
  if (typeof object.Ref === 'string') own.push(object.Ref);
  if (Array.isArray(object['Fn::GetAtt'])) own.push(String(object['Fn::GetAtt'][0]));
  const sub = object['Fn::Sub'];
  const subText = Array.isArray(sub) ? sub[0] : sub;
  if (typeof subText === 'string') own.push(...[...subText.matchAll(/\$\{([^}!.]+)[^}]*\}/g)].map((match) => match[1]!));
  return [...own, ...Object.values(object).flatMap(references)];
}

describe.each([
  ['dev', {}],
  [
    'prod',
    {
      ...PROD_CONTEXT,
      alarmEmail: 'oncall@example.com',
      backupCopyVaultArn: 'arn:aws:backup:eu-central-1:222222222222:backup-vault:copies',
    },
  ],
] as const)('stack split (%s)', (stage, context) => {
  let stack: ServiceStack;
  let template: Template;
  let templates: Record<string, Template>;

  beforeAll(() => {
    ({ stack, template, templates } = synthesize(stage, context));
  });

  it(`keeps the parent template below ${RESOURCE_BUDGET} resources, and every nested one too`, () => {
    const counts = Object.fromEntries(Object.entries(templates).map(([name, each]) => [name, count(each)]));
    expect(Object.keys(counts).sort()).toEqual(['ApiStack', 'OperationsStack', 'parent']);
    for (const [name, resources] of Object.entries(counts)) expect(resources, name).toBeLessThan(RESOURCE_BUDGET);
    expect(RESOURCE_BUDGET).toBeLessThan(MAX_RESOURCES);
    // Nothing is lost or made twice by the split: the nested stacks' resources plus the parent's, less the two
    // AWS::CloudFormation::Stack resources, are the whole service.
    expect(count(template)).toBe(counts.parent! + counts.ApiStack! + counts.OperationsStack! - 2);
  });

  it('stays within the parameters and outputs CloudFormation allows a template', () => {
    for (const [name, each] of Object.entries(templates)) {
      expect(Object.keys(json(each).Parameters ?? {}).length, name).toBeLessThan(MAX_PARAMETERS);
      expect(Object.keys(json(each).Outputs ?? {}).length, name).toBeLessThan(MAX_OUTPUTS);
    }
  });

  it('nests the HTTP API and operations, each one AWS::CloudFormation::Stack of the parent', () => {
    expect(idsOfType(templates.parent!, 'AWS::CloudFormation::Stack')).toEqual(
      [logicalId(stack.apiStack.nestedStackResource!), logicalId(stack.operationsStack.nestedStackResource!)].sort(),
    );
  });

  it('keeps state and the lifecycles in the parent: tables, keys, the token, workflows, schedules, events, the alarm topic', () => {
    const parent = templates.parent!;
    expect(idsOfType(parent, 'AWS::DynamoDB::GlobalTable')).toHaveLength(tableNames.length);
    expect(idsOfType(parent, 'AWS::StepFunctions::StateMachine')).toHaveLength(Object.keys(stack.workflows).length);
    expect(idsOfType(parent, 'AWS::SecretsManager::Secret').sort()).toEqual(
      [logicalId(stack.upstreamToken), logicalId(stack.paymentsSecret)].sort(),
    );
    expect(idsOfType(parent, 'AWS::Scheduler::Schedule')).toHaveLength(Object.keys(schedules).length);
    expect(idsOfType(parent, 'AWS::Events::EventBus')).toEqual([logicalId(stack.events.bus)]);
    expect(idsOfType(parent, 'AWS::SNS::Topic')).toEqual([logicalId(stack.alarmTopic.topic)]);
    expect(idsOfType(parent, 'AWS::CloudWatch::Alarm')).toEqual([]);
    expect(idsOfType(parent, 'AWS::ApiGatewayV2::Route')).toEqual([]);
  });

  it('puts every route, its function, alias and deployment group, the two rollback alarms and the console in the API stack', () => {
    const api = templates.ApiStack!;
    expect(idsOfType(api, 'AWS::ApiGatewayV2::Route')).toHaveLength(routes.length);
    // Besides CDK's own handlers for the console's bucket (deploying its files, emptying it on dev).
    expect(idsOfType(api, 'AWS::Lambda::Function')).toEqual(
      expect.arrayContaining(routes.map((route) => logicalId(stack.api.functions[route.name]!.function))),
    );
    expect(idsOfType(api, 'AWS::CodeDeploy::DeploymentGroup')).toHaveLength(routes.length);
    expect(idsOfType(api, 'AWS::CloudWatch::Alarm')).toEqual(stack.apiRollbackAlarms.alarms.map((alarm) => logicalId(alarm)).sort());
    expect(idsOfType(api, 'AWS::CloudFront::Distribution')).toEqual([logicalId(stack.console.distribution)]);
  });

  it('puts the dashboard, every other alarm and the canaries in the operations stack', () => {
    const operations = templates.OperationsStack!;
    expect(idsOfType(operations, 'AWS::CloudWatch::Dashboard')).toEqual([logicalId(stack.operations.dashboard)]);
    const alarms = idsOfType(operations, 'AWS::CloudWatch::Alarm');
    expect(alarms.length + stack.apiRollbackAlarms.alarms.length).toBe(stack.operations.alarms.length);
    expect(idsOfType(operations, 'AWS::Synthetics::Canary')).toEqual(
      [logicalId(stack.operationsStack.canaries.apiCheck), logicalId(stack.operationsStack.canaries.lifecycleCheck)].sort(),
    );
    const monitoring = ['AWS::CloudWatch::Alarm', 'AWS::CloudWatch::Dashboard', 'AWS::Logs::MetricFilter', 'AWS::Synthetics::Canary'];
    // Beside the canaries: their key secrets, their role and policy, their artifacts bucket (emptied by CDK's
    // handler on dev).
    const canaryParts = [
      'AWS::SecretsManager::Secret',
      'AWS::IAM::Role',
      'AWS::IAM::Policy',
      'AWS::S3::Bucket',
      'AWS::S3::BucketPolicy',
      'Custom::S3AutoDeleteObjects',
      'AWS::Lambda::Function',
    ];
    const types = new Set(Object.values(json(operations).Resources).map((resource) => resource.Type));
    expect([...types].filter((type) => !monitoring.includes(type) && !canaryParts.includes(type))).toEqual([]);
  });

  it('wires every reference across stacks to a real resource', () => {
    const whole = json(template);
    const known = new Set([...Object.keys(whole.Resources), ...Object.keys(whole.Parameters ?? {})]);
    const dangling = [...new Set(references([whole.Resources, whole.Outputs]))].filter((id) => !id.startsWith('AWS::') && !known.has(id));
    expect(dangling).toEqual([]);
  });
});
