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
  /** Whether the function sends e-mail (Amazon SES on AWS). */
  readonly sendsMail?: boolean;
}
