import type { TableName } from './tables';
import type { WorkflowName } from './workflow-names';

// What each function may touch, declared next to its route, step or job; the stack grants exactly this.

/**
 * The DynamoDB operations a function calls on a table, each granted as the IAM action of the same name. A
 * transaction needs the action of each of its items (PutItem, UpdateItem, DeleteItem, ConditionCheckItem).
 */
type DynamoAction = 'GetItem' | 'BatchGetItem' | 'Query' | 'Scan' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'ConditionCheckItem';
export type TableAccess = readonly DynamoAction[];

/** Customers' secrets: `seal` encrypts them (KMS GenerateDataKey), `open` decrypts them (KMS Decrypt). */
export type SecretsAccess = 'seal' | 'open';

export interface FunctionAccess {
  readonly tables?: Partial<Record<TableName, TableAccess>>;
  /** State machines the function may start (and describe). */
  readonly startsWorkflows?: readonly WorkflowName[];
  /** State machines whose executions the function may stop. */
  readonly stopsWorkflows?: readonly WorkflowName[];
  /** Whether the function calls the upstream compute API (and so reads its token secret). */
  readonly upstream?: boolean;
  /** Whether the function calls the payment provider (and so reads its secret). */
  readonly payments?: boolean;
  /** Whether the function sends e-mail (Amazon SES on AWS). */
  readonly sendsMail?: boolean;
  /** What the function does with customers' sealed secrets. */
  readonly secrets?: readonly SecretsAccess[];
  /** Whether the function queues webhook deliveries. */
  readonly webhookQueue?: boolean;
  /** Whether the function queues console e-mails for the mail sender. */
  readonly authMailQueue?: boolean;
  /** Whether the function publishes events to the service's bus. */
  readonly publishesEvents?: boolean;
}

/** What a Bearer route's writes take besides their own items: the checks that its key and its account still hold. */
export const requestGuardAccess: Partial<Record<TableName, TableAccess>> = {
  apiKeys: ['ConditionCheckItem'],
  accounts: ['ConditionCheckItem'],
};

/**
 * What a change of an instance's rate takes besides the instance: its account's checkpoint read and moved, and the
 * closed piece booked on the ledger, in the change's own transaction.
 */
export const checkpointAccess: FunctionAccess = { tables: { accounts: ['GetItem', 'UpdateItem'], ledger: ['PutItem'] } };

/** What calling the upstream takes besides its token: the shared request budget, one item of the counters table, taken by conditional writes (never read). */
export const upstreamBudgetAccess: Partial<Record<TableName, TableAccess>> = { counters: ['UpdateItem'] };

/** The union of two accesses: every operation either calls, on every table either touches. */
export function mergeAccess(a: FunctionAccess, b: FunctionAccess): FunctionAccess {
  const names = [...new Set([...Object.keys(a.tables ?? {}), ...Object.keys(b.tables ?? {})])] as TableName[];
  const union = <T>(x: readonly T[] = [], y: readonly T[] = []) => [...new Set([...x, ...y])];
  return {
    tables: Object.fromEntries(names.map((name) => [name, union(a.tables?.[name], b.tables?.[name]).sort()])),
    startsWorkflows: union(a.startsWorkflows, b.startsWorkflows),
    stopsWorkflows: union(a.stopsWorkflows, b.stopsWorkflows),
    upstream: Boolean(a.upstream || b.upstream),
    payments: Boolean(a.payments || b.payments),
    sendsMail: Boolean(a.sendsMail || b.sendsMail),
    secrets: union(a.secrets, b.secrets),
    webhookQueue: Boolean(a.webhookQueue || b.webhookQueue),
    authMailQueue: Boolean(a.authMailQueue || b.authMailQueue),
    publishesEvents: Boolean(a.publishesEvents || b.publishesEvents),
  };
}
