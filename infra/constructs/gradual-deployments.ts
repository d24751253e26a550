import { Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';

export interface GradualDeploymentsProps {
  /** The aliases whose new versions are shifted in gradually, by name. */
  readonly aliases: Readonly<Record<string, lambda.Alias>>;
  /** Any of these in ALARM during a shift rolls the alias back to the version it had. */
  readonly rollbackAlarms: readonly cloudwatch.IAlarm[];
  /** @default 10 % of the traffic for 5 minutes, then all of it */
  readonly deploymentConfig?: codedeploy.ILambdaDeploymentConfig;
}

/** One CodeDeploy application; a canary deployment group per alias, sharing one service role. */
export class GradualDeployments extends Construct {
  readonly application: codedeploy.LambdaApplication;
  readonly groups: Readonly<Record<string, codedeploy.LambdaDeploymentGroup>>;

  constructor(scope: Construct, id: string, props: GradualDeploymentsProps) {
    super(scope, id);
    this.application = new codedeploy.LambdaApplication(this, 'Application');
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('codedeploy.amazonaws.com'),
      managedPolicies: [iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSCodeDeployRoleForLambdaLimited')],
    });
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]',
      reason:
        "AWS's own policy for CodeDeploy on Lambda, kept current by AWS: it may only read functions and move aliases, " +
        'and invoke hook functions named CodeDeployHook_*, of which this stack has none.',
    });
    this.groups = Object.fromEntries(
      Object.entries(props.aliases).map(([name, alias]) => [
        name,
        new codedeploy.LambdaDeploymentGroup(this, name, {
          application: this.application,
          alias,
          role,
          deploymentConfig: props.deploymentConfig ?? codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
          alarms: [...props.rollbackAlarms],
          autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
        }),
      ]),
    );
  }
}
