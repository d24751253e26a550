import { CfnResource, Stack, Validations } from 'aws-cdk-lib';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference';
import type { IConstruct } from 'constructs';

const IAM_TYPES = new Set(['AWS::IAM::Policy', 'AWS::IAM::Role', 'AWS::IAM::ManagedPolicy']);

/** Every `Resource` of every statement in `value`, however deep. */
function statementResources(value: unknown): unknown[] {
  if (Array.isArray(value)) return value.flatMap(statementResources);
  if (value === null || typeof value !== 'object') return [];
  const object = value as Record<string, unknown>;
  const own = Array.isArray(object.Statement)
    ? (object.Statement as { Resource?: unknown }[]).flatMap((statement) => [statement.Resource ?? []].flat())
    : [];
  return [...own, ...Object.values(object).flatMap(statementResources)];
}

/**
 * Acknowledges (cdk-nag AwsSolutions-IAM5) each wildcard resource in the IAM policies under `scope`, by the exact
 * finding, for grants whose shape belongs to AWS or CDK rather than to us. It runs at validation, once references
 * across stacks are settled and the stack's region is known, so the finding names the resource as the template has it.
 */
export function acknowledgeWildcardResources(scope: IConstruct, reason: string): void {
  scope.node.addValidation({
    validate: () => {
      const stack = Stack.of(scope);
      const elements = scope.node
        .findAll()
        .filter((child): child is CfnResource => CfnResource.isCfnResource(child) && IAM_TYPES.has(child.cfnResourceType));
      for (const element of elements) {
        const template = stack.resolve((element as unknown as { _toCloudFormation(): unknown })._toCloudFormation());
        for (const resource of statementResources(template)) {
          const flat = flattenCfnReference(resource);
          if (flat.includes('*')) Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::${flat}]`, reason });
        }
      }
      return [];
    },
  });
}
