import type { Construct } from 'constructs';
import { Operations, type OperationsProps } from './operations';
import { ServiceNestedStack } from './service-nested-stack';

/**
 * A nested stack for the dashboard and the alarms (about ninety resources, one more with every function, table or
 * state machine). It reads the other stacks' functions, tables and state machines by name and creates nothing
 * they depend on, so it can change without touching them.
 */
export class OperationsStack extends ServiceNestedStack {
  readonly operations: Operations;

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id, { description: `VpsService-${props.stage} dashboard and alarms` });
    this.operations = new Operations(this, 'Operations', props);
  }
}
