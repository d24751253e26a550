import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, CfnElement, NestedStack, Stack } from 'aws-cdk-lib';
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
  return { stack, template: wholeService(stack), templates: templatesOf(stack) };
}

/** The stack's nested stacks (those whose parent it is). */
export function nestedStacksOf(stack: Stack): NestedStack[] {
  return stack.node
    .findAll()
    .filter((construct): construct is NestedStack => NestedStack.isNestedStack(construct) && construct.nestedStackParent === stack);
}

/** Each template as CloudFormation receives it: the parent's under `parent`, each nested stack's under its construct id. */
export function templatesOf(stack: Stack): Record<string, Template> {
  return {
    parent: Template.fromStack(stack),
    ...Object.fromEntries(nestedStacksOf(stack).map((nested) => [nested.node.id, Template.fromStack(nested)])),
  };
}

type Json = unknown;

/** `value` with every `{ Ref }` or `{ Fn::GetAtt }` that `replace` knows swapped for what it gives, deeply. */
function substitute(value: Json, replace: (reference: Record<string, Json>) => Json | undefined): Json {
  if (Array.isArray(value)) return value.map((item) => substitute(item, replace));
  if (value === null || typeof value !== 'object') return value;
  const object = value as Record<string, Json>;
  const replaced = replace(object);
  if (replaced !== undefined) return substitute(structuredClone(replaced), replace);
  return Object.fromEntries(Object.entries(object).map(([key, item]) => [key, substitute(item, replace)]));
}

/**
 * The whole service as CloudFormation wires it, in one template: the parent's resources and every nested stack's,
 * each nested parameter replaced by the value the parent passes it, each nested output read through the value it
 * exports. A reference across stacks then reads as it would within one (`{ Ref: <table> }` in a nested function's
 * environment), so assertions about what refers to what hold wherever a resource lives. The nested stack
 * resources themselves are left out. Logical ids do not collide across templates, but for CDK's stack-wide
 * singletons, which in a nested stack are prefixed with its construct id.
 */
export function wholeService(stack: Stack): Template {
  const parent = Template.fromStack(stack).toJSON() as { Resources: Record<string, any>; Outputs?: Record<string, any> };
  const resources: Record<string, any> = { ...parent.Resources };
  const outputs = new Map<string, Record<string, Json>>();
  for (const nested of nestedStacksOf(stack)) {
    const id = logicalId(nested.nestedStackResource!);
    const template = Template.fromStack(nested).toJSON() as { Resources: Record<string, any>; Outputs?: Record<string, { Value: Json }> };
    const parameters: Record<string, Json> = resources[id].Properties.Parameters ?? {};
    const passed = (reference: Record<string, Json>) =>
      typeof reference.Ref === 'string' && reference.Ref in parameters ? parameters[reference.Ref] : undefined;
    // A stack-wide singleton CDK makes (a custom resource provider) has the same logical id in every stack that
    // uses it: in the whole-service view the nested one is named after its stack.
    const renamed = new Map(
      Object.keys(template.Resources)
        .filter((resourceId) => resourceId in resources)
        .map((resourceId) => [resourceId, `${nested.node.id}${resourceId}`]),
    );
    const renaming = (reference: Record<string, Json>) => {
      if (typeof reference.Ref === 'string' && renamed.has(reference.Ref)) return { Ref: renamed.get(reference.Ref)! };
      const getAtt = reference['Fn::GetAtt'];
      if (Array.isArray(getAtt) && renamed.has(String(getAtt[0])))
        return { 'Fn::GetAtt': [renamed.get(String(getAtt[0]))!, ...getAtt.slice(1)] };
      return undefined;
    };
    for (const [resourceId, resource] of Object.entries(template.Resources)) {
      const id = renamed.get(resourceId) ?? resourceId;
      if (id in resources) throw new Error(`logical id ${id} of ${nested.node.path} is also in another template`);
      const dependsOn = resource.DependsOn && asList(resource.DependsOn).map((dependency: string) => renamed.get(dependency) ?? dependency);
      resources[id] = substitute(substitute({ ...resource, ...(dependsOn && { DependsOn: dependsOn }) }, renaming), passed);
    }
    outputs.set(
      id,
      Object.fromEntries(Object.entries(template.Outputs ?? {}).map(([name, output]) => [name, substitute(output.Value, passed)])),
    );
    delete resources[id];
  }
  const exported = (reference: Record<string, Json>) => {
    const getAtt = reference['Fn::GetAtt'];
    if (!Array.isArray(getAtt) || !outputs.has(String(getAtt[0]))) return undefined;
    const name = String(getAtt[1]).replace(/^Outputs\./, '');
    const value = outputs.get(String(getAtt[0]))![name];
    if (value === undefined) throw new Error(`no output ${name} in nested stack ${getAtt[0]}`);
    return value;
  };
  return Template.fromJSON({
    ...parent,
    Resources: substitute(resources, exported) as Record<string, Json>,
    Outputs: substitute(parent.Outputs ?? {}, exported) as Record<string, Json>,
  });
}

export function logicalId(construct: IConstruct): string {
  const stack = Stack.of(construct);
  const element = CfnElement.isCfnElement(construct) ? construct : (construct.node.defaultChild as CfnElement);
  return stack.resolve(stack.getLogicalId(element));
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

/**
 * The service's own functions, by logical id. CDK's custom-resource handlers (the console file deployment, the
 * bucket clean-up) are CDK's: they carry no POWERTOOLS_SERVICE_NAME.
 */
export function serviceFunctions(template: Template): Record<string, Resource> {
  return Object.fromEntries(
    Object.entries(template.findResources('AWS::Lambda::Function') as Record<string, Resource>).filter(
      ([, fn]) => fn.Properties.Environment?.Variables?.POWERTOOLS_SERVICE_NAME,
    ),
  );
}
