import { join } from 'node:path';
import { Duration, Names, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference';
import { Construct } from 'constructs';
import { DEFAULT_STEP_TIMEOUT_SECONDS, type WorkflowDefinition } from '../workflows';
import { ApiFunction, REPO_ROOT, type ServiceContext } from './api-function';
import { stackUniqueName } from './stack-unique-name';

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
    for (const step of Object.values(this.steps)) {
      Validations.of(step.function).acknowledge({
        id: 'Serverless-LambdaDLQ',
        reason:
          'Invoked synchronously by Step Functions, whose Retry and Catch handle its errors; a dead-letter queue only ever holds asynchronous events.',
      });
    }
    // Each Task names the version this deploy published. A running execution keeps the definition it started
    // with, so it finishes on the code it started with, and a deploy never switches code under it mid-run.
    const functionArns = Object.fromEntries(Object.entries(this.steps).map(([key, step]) => [key, step.alias.version.functionArn]));

    const logGroup = new logs.LogGroup(this, 'LogGroup', {
      // The vendedlogs prefix keeps Step Functions from growing the account's CloudWatch Logs resource policy; the
      // stack's id keeps a retained group from blocking the stack's re-creation.
      logGroupName: stackUniqueName(`/aws/vendedlogs/states/${Names.uniqueId(this)}`),
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
    // Every version of exactly these functions: executions started before a deploy still call the older ones.
    const everyVersion = Object.values(this.steps).map((step) => `${step.function.functionArn}:*`);
    this.stateMachine.addToRolePolicy(new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: everyVersion }));
    const role = this.stateMachine.role;
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'The CloudWatch Logs delivery and X-Ray APIs behind logging and tracing take no resource ARN.',
    });
    for (const arn of everyVersion) {
      Validations.of(role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${flattenCfnReference(Stack.of(this).resolve(arn))}]`,
        reason: 'Every version of one step function: executions that started before a deploy call the version they started with.',
      });
    }
  }
}
