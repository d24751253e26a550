import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Template } from 'aws-cdk-lib/assertions';
import { REPO_ROOT } from '../../infra/constructs/api-function';
import { routes } from '../../shared/routes';
import type { ServiceStack } from '../../infra/stack';
import { scheduleNames } from '../../infra/schedules';
import { workflowNames } from '../../shared/workflow-names';
import { asList, logicalId, policyStatements, serviceFunctions, synthesize } from './synth';

describe('safe deploys', () => {
  let stack: ServiceStack;
  let template: Template;
  const resources = (type: string) => template.findResources(type);

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
  });

  it('gives every function a version and a live alias on it', () => {
    const functions = Object.keys(serviceFunctions(template));
    const aliases = Object.values(resources('AWS::Lambda::Alias')).map((alias) => alias.Properties);
    const versions = resources('AWS::Lambda::Version');

    expect(aliases.map((alias) => alias.Name)).toEqual(functions.map(() => 'live'));
    expect(aliases.map((alias) => alias.FunctionName.Ref).sort()).toEqual([...functions].sort());
    for (const alias of aliases) {
      const version = versions[alias.FunctionVersion['Fn::GetAtt'][0]];
      expect(version?.Properties.FunctionName).toEqual({ Ref: alias.FunctionName.Ref });
      expect(version?.DeletionPolicy).toBe('Retain');
    }
  });

  it('routes every API request to the live alias', () => {
    const integrations = Object.values(resources('AWS::ApiGatewayV2::Integration')).map(
      (integration) => integration.Properties.IntegrationUri,
    );
    const aliasIds = routes.map((route) => logicalId(stack.api.functions[route.name]!.alias));
    expect(integrations.map((uri) => uri.Ref).sort()).toEqual(aliasIds.sort());
  });

  it('shifts each API function to a new version 10 % for 5 minutes, rolling back on the API 5xx and latency alarms', () => {
    const groups = Object.values(resources('AWS::CodeDeploy::DeploymentGroup')).map((group) => group.Properties);
    expect(groups).toHaveLength(routes.length);
    const alarmNames = [{ Ref: logicalId(stack.apiRollbackAlarms.serverErrorRate) }, { Ref: logicalId(stack.apiRollbackAlarms.latency) }];
    for (const group of groups) {
      expect(group).toMatchObject({
        DeploymentConfigName: 'CodeDeployDefault.LambdaCanary10Percent5Minutes',
        AlarmConfiguration: { Enabled: true, Alarms: alarmNames.map((name) => ({ Name: name })) },
        AutoRollbackConfiguration: { Enabled: true },
      });
      expect(group.AutoRollbackConfiguration.Events.sort()).toEqual([
        'DEPLOYMENT_FAILURE',
        'DEPLOYMENT_STOP_ON_ALARM',
        'DEPLOYMENT_STOP_ON_REQUEST',
      ]);
    }
    for (const name of routes.map((route) => route.name)) {
      const alias = resources('AWS::Lambda::Alias')[logicalId(stack.api.functions[name]!.alias)];
      expect(alias?.UpdatePolicy?.CodeDeployLambdaAliasUpdate, name).toMatchObject({
        DeploymentGroupName: { Ref: logicalId(stack.apiDeployments.groups[name]!) },
      });
    }
  });

  it('has the state machines call the published version of each step, and their roles every version of exactly those', () => {
    for (const name of workflowNames) {
      const workflow = stack.workflows[name];
      const machine = resources('AWS::StepFunctions::StateMachine')[logicalId(workflow.stateMachine)]!;
      const substitutions = machine.Properties.DefinitionSubstitutions as Record<string, { Ref: string }>;
      expect(Object.keys(substitutions).sort(), name).toEqual(Object.keys(workflow.steps).sort());
      for (const [key, step] of Object.entries(workflow.steps)) {
        const version = resources('AWS::Lambda::Version')[substitutions[key]!.Ref];
        expect(version?.Properties.FunctionName, `${name}.${key}`).toEqual({ Ref: logicalId(step.function) });
      }

      const invokes = policyStatements(template, logicalId(workflow.stateMachine.role)).filter((statement) =>
        asList(statement.Action).includes('lambda:InvokeFunction'),
      );
      const everyVersion = Object.values(workflow.steps).map((step) => ({
        'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(step.function), 'Arn'] }, ':*']],
      }));
      expect(
        invokes.flatMap((statement) => asList(statement.Resource)),
        name,
      ).toHaveLength(everyVersion.length);
      expect(
        invokes.flatMap((statement) => asList(statement.Resource)),
        name,
      ).toEqual(expect.arrayContaining(everyVersion));
    }
  });

  it('has each schedule invoke the live alias, and only that', () => {
    for (const name of scheduleNames) {
      const scheduled = stack.scheduled[name];
      const alias = { Ref: logicalId(scheduled.function.alias) };
      expect(template.toJSON().Resources[stack.resolve(stack.getLogicalId(scheduled.schedule))].Properties.Target.Arn).toEqual(alias);
      const invokes = policyStatements(template)
        .filter((statement) => asList(statement.Action).includes('lambda:InvokeFunction'))
        .filter((statement) => JSON.stringify(statement.Resource).includes(logicalId(scheduled.function.alias)));
      expect(invokes.map((statement) => statement.Resource)).toEqual([alias]);
    }
  });

  it('creates the upstream token and payment secrets empty, with nothing CloudFormation could ever generate over the real ones', () => {
    for (const made of [stack.upstreamToken, stack.paymentsSecret]) {
      const secret = resources('AWS::SecretsManager::Secret')[logicalId(made)]!;
      expect(secret.Properties).not.toHaveProperty('GenerateSecretString');
      expect(secret.Properties).not.toHaveProperty('SecretString');
    }
    // The canaries' keys are put by the operator too; no secret of the stack has a value CloudFormation made.
    const canaries = stack.operationsStack.canaries;
    expect(Object.keys(resources('AWS::SecretsManager::Secret')).sort()).toEqual(
      [stack.upstreamToken, stack.paymentsSecret, canaries.apiCheckKey, canaries.lifecycleCheckKey]
        .map((secret) => logicalId(secret))
        .sort(),
    );
    for (const other of Object.values(resources('AWS::SecretsManager::Secret'))) {
      expect(other.Properties).not.toHaveProperty('GenerateSecretString');
      expect(other.Properties).not.toHaveProperty('SecretString');
    }
  });

  it('deploys every stack of the stage (prod has its web ACL in us-east-1), only after approval of changes that broaden security', () => {
    const scripts = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).scripts;
    expect(scripts.deploy).toBe('cdk deploy --all --require-approval broadening');
  });
});
