import { NestedStack } from 'aws-cdk-lib';

const byName = (section: Record<string, unknown> | undefined) =>
  section && Object.fromEntries(Object.entries(section).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/**
 * A nested stack whose template is the same from one synth to the next. CDK adds a parameter (and an output) for
 * each reference across stacks in the order it meets them, which varies between runs (token numbers start at a
 * random offset, and IAM statements are merged in the order of their tokens). The template's hash names the asset
 * the parent points at, so a different order would make every `cdk diff` show the nested stack as changed; here
 * both sections are written in name order.
 */
export abstract class ServiceNestedStack extends NestedStack {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the signature CDK declares
  protected override _toCloudFormation(): any {
    const template = super._toCloudFormation();
    return { ...template, Parameters: byName(template.Parameters), Outputs: byName(template.Outputs) };
  }
}
