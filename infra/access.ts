import type { TableName } from './tables';
import type { WorkflowName } from './workflows';

/** What one function may touch; the CDK stack turns this into IAM grants and nothing more. */
export type TableAccess = 'read' | 'write' | 'readwrite';

export interface FunctionAccess {
  readonly tables?: Partial<Record<TableName, TableAccess>>;
  /** State machines the function may start (and describe). */
  readonly startsWorkflows?: readonly WorkflowName[];
  /** State machines whose executions the function may stop. */
  readonly stopsWorkflows?: readonly WorkflowName[];
  /** Whether the function calls the upstream compute API (and so reads its token secret). */
  readonly upstream?: boolean;
  /** Whether the function seals or opens secrets kept at rest (and so reads the sealing key). */
  readonly sealingKey?: boolean;
  /** Whether the function queues webhook deliveries. */
  readonly webhookQueue?: boolean;
  /** Whether the function publishes events to the service's bus. */
  readonly publishesEvents?: boolean;
}
