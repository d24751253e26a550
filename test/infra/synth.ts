import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { REPO_ROOT } from '../../infra/constructs/api-function';
import { deploymentEnvironment, ServiceStack, type Stage } from '../../infra/stack';

export type Resource = { Properties: Record<string, any>; DeletionPolicy?: string; UpdateReplacePolicy?: string };
export type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

/** The feature flags `cdk synth` runs with, so these tests see the same template. */
export const cdkJsonContext = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')).context;

/** What `npm run synth` needs for prod besides the stage. */
export const PROD_CONTEXT = { account: '111111111111', region: 'eu-west-1', instanceDomainSuffix: 'vps.example.com' } as const;

/** The service stack in a fresh App, placed as `cdk synth` places it; bundling skipped (the bundling tests bundle for real). */
export function synthesize(stage: Stage, extraContext: Record<string, string> = {}) {
  const app = new App({ context: { ...cdkJsonContext, ...extraContext, stage, 'aws:cdk:bundling-stacks': [] } });
  const stack = new ServiceStack(app, `VpsService-${stage}`, { env: deploymentEnvironment(app) });
  return { stack, template: Template.fromStack(stack) };
}

export function logicalId(construct: IConstruct): string {
  const stack = Stack.of(construct);
  return stack.resolve(stack.getLogicalId(construct.node.defaultChild as CfnElement));
}

export const asList = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** The statements of every IAM policy, or of the policies attached to one role. */
export function policyStatements(template: Template, roleId?: string): Statement[] {
  const filter = roleId ? { Properties: { Roles: Match.arrayWith([{ Ref: roleId }]) } } : undefined;
  return Object.values(template.findResources('AWS::IAM::Policy', filter)).flatMap(
    (policy) => policy.Properties.PolicyDocument.Statement as Statement[],
  );
}

/** The logical ids a template value refers to (Ref or Fn::GetAtt), however deeply joined; no pseudo parameters. */
export function referencedIds(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(referencedIds);
  if (value === null || typeof value !== 'object') return [];
  const { Ref: ref, 'Fn::GetAtt': getAtt } = value as { Ref?: unknown; 'Fn::GetAtt'?: unknown };
  if (typeof ref === 'string') return ref.startsWith('AWS::') ? [] : [ref];
  if (Array.isArray(getAtt)) return [String(getAtt[0])];
  return Object.values(value).flatMap(referencedIds);
}
