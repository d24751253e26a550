import type { RemovalPolicy } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ServiceCanaries } from './canaries';
import { Operations, type OperationsProps } from './operations';
import { ServiceNestedStack } from './service-nested-stack';

export interface OperationsStackProps extends OperationsProps {
  /** The API's base URL, which the canaries call. */
  readonly apiUrl: string;
  /** Of the canaries' key secrets and artifacts bucket. */
  readonly removalPolicy: RemovalPolicy;
}

/**
 * A nested stack for the dashboard, the alarms and the synthetic canaries (about a hundred resources, one more with
 * every function, table or state machine). It reads the other stacks' functions, tables and state machines by name
 * and creates nothing they depend on, so it can change without touching them.
 */
export class OperationsStack extends ServiceNestedStack {
  readonly operations: Operations;
  readonly canaries: ServiceCanaries;

  constructor(scope: Construct, id: string, props: OperationsStackProps) {
    super(scope, id, { description: `VpsService-${props.stage} dashboard, alarms and canaries` });
    this.operations = new Operations(this, 'Operations', props);
    this.canaries = new ServiceCanaries(this, 'Canaries', {
      stage: props.stage,
      apiUrl: props.apiUrl,
      alarmTopic: props.alarmTopic,
      removalPolicy: props.removalPolicy,
    });
    this.operations.alarms.push(...this.canaries.alarms);
    this.operations.dashboard.addWidgets(this.canaries.dashboardWidget());
  }
}
