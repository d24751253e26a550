import { join } from 'node:path';
import { Duration, Names, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { DEFAULT_STEP_TIMEOUT_SECONDS, type WorkflowDefinition } from '../workflows';
import { ApiFunction, REPO_ROOT, type ServiceContext } from './api-function';

export interface WorkflowProps {
  readonly definition: WorkflowDefinition;
  readonly service: ServiceContext;
}

/** A Standard state machine from its ASL file, with one function per Task placeholder. */
export class Workflow extends Construct {
  readonly stateMachine: sfn.StateMachine;
  /** The step functions, by their placeholder key in the ASL file. */
  readonly steps: Readonly<Record<string, ApiFunction>>;

  constructor(scope: Construct, id: string, { definition, service }: WorkflowProps) {
    super(scope, id);
    this.steps = Object.fromEntries(
      Object.entries(definition.steps).map(([key, step]) => [
        key,
        new ApiFunction(this, key, {
          entry: step.entry,
          access: step.access,
          service,
          timeout: Duration.seconds(step.timeoutSeconds ?? DEFAULT_STEP_TIMEOUT_SECONDS),
        }),
      ]),
    );
    const functionArns = Object.fromEntries(
      Object.entries(this.steps).map(([key, step]) => [key, step.function.functionArn]),
    );

    const logGroup = new logs.LogGroup(this, 'LogGroup', {
      // The vendedlogs prefix keeps Step Functions from growing the account's CloudWatch Logs resource policy.
      logGroupName: `/aws/vendedlogs/states/${Names.uniqueId(this)}`,
      retention: service.logs.retention,
      removalPolicy: service.logs.removalPolicy,
    });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromFile(join(REPO_ROOT, definition.definitionFile)),
      definitionSubstitutions: functionArns,
      // Execution data stays out of the logs: step payloads can carry the instance's root password.
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
      tracingEnabled: true,
    });
    // The unqualified ARNs the definition names, and no versions or aliases.
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: Object.values(functionArns) }),
    );
    Validations.of(this.stateMachine.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'The CloudWatch Logs delivery and X-Ray APIs behind logging and tracing take no resource ARN.',
    });
  }
}
