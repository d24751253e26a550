import { tableName, type Platform } from '../platform';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import {
  autoRechargeSchema,
  balanceNoticeSchema,
  AUTO_RECHARGE_MAX_FAILURES,
  type AutoRecharge,
  type BalanceNotice,
} from '../model/payments';
import { burningSegmentSchema } from '../model/burn';
import { batchGetAll, readAll, whenConditionHolds } from './dynamo-helpers';

export const accountSchema = z.object({
  account_id: z.string(),
  email: z.string(),
  confirmed: z.boolean(),
  suspended: z.boolean(),
  deleted_at: z.string().nullable().default(null),
  /** Integer micro-dollars. */
  balance: z.number().int(),
  /** Only deposits add to it and nothing takes from it, so "has ever deposited $1" is simply total >= $1. */
  total_deposited: z.number().int(),
  billing_paused: z.boolean(),
  created_at: z.string(),
  /**
   * The credential generation: every change of password adds one. A session and an e-mailed link carry the
   * generation they were issued under and are worthless once it has moved on.
   */
  password_version: z.number().int().default(0),
  /** The payment provider's customer and saved card (`cus_…`, `pm_…`), once a top-up saved one. */
  payment_customer_id: z.string().nullable().default(null),
  payment_method_id: z.string().nullable().default(null),
  /** Off until the customer turns it on. */
  auto_recharge: autoRechargeSchema.nullable().default(null),
  /** Auto-recharge's crossings of its threshold claimed so far (shared/model/payments.ts, rechargePlan). */
  recharge_crossing: z.number().int().nonnegative().default(0),
  /** When the open crossing was claimed; absent when none is open. */
  recharge_open_since: z.string().optional(),
  /** The last runway warning given (each level once per crossing). */
  balance_notice: balanceNoticeSchema.default('none'),
  /** The billing checkpoint (shared/model/burn.ts): the open segments of the instances billed now, by instance id. */
  burning: z.record(z.string(), burningSegmentSchema).default({}),
  /** Every move of the checkpoint adds one, on condition it is still the one read: moves of one account are serial. */
  billing_version: z.number().int().default(0),
  /** When the account must next be reviewed (its entry in the sparse review index); absent when nothing is billed. */
  review_at: z.string().optional(),
});
export type Account = z.infer<typeof accountSchema>;

export async function getAccount(deps: Platform, accountId: string): Promise<Account | undefined> {
  // Strongly consistent: balances, suspensions and pauses decided a moment ago apply to the very next request.
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'accounts'), Key: { account_id: accountId }, ConsistentRead: true }),
  );
  return Item ? accountSchema.parse(Item) : undefined;
}

/**
 * Of these accounts, the ones billing-paused (read in batches, eventually consistent: half the units, and a pause set
 * a moment ago is held by the next sweep; the power-off itself is conditioned on the pause still holding).
 */
export async function billingPausedAmong(deps: Platform, accountIds: readonly string[]): Promise<Set<string>> {
  const accounts = await batchGetAll(
    deps,
    tableName(deps, 'accounts'),
    accountIds.map((account_id) => ({ account_id })),
    accountSchema,
    false,
  );
  return new Set(accounts.filter((account) => account.billing_paused).map((account) => account.account_id));
}

/** Every account, or those with this e-mail address (case-insensitive): a whole-table scan, for operators only. */
export async function scanAccounts(deps: Platform, email?: string): Promise<Account[]> {
  const accounts = await readAll(deps, { kind: 'scan', TableName: tableName(deps, 'accounts'), ConsistentRead: true }, accountSchema);
  const wanted = email?.toLowerCase();
  return accounts
    .filter((account) => wanted === undefined || account.email.toLowerCase() === wanted)
    .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.account_id.localeCompare(b.account_id));
}

export async function insertAccount(deps: Platform, account: Account): Promise<void> {
  // No open segments is no attribute (see checkpointMoveItem).
  const { burning, ...item } = accountSchema.parse(account);
  await deps.dynamo.send(
    new PutCommand({
      TableName: tableName(deps, 'accounts'),
      Item: Object.keys(burning).length > 0 ? { ...item, burning } : item,
      ConditionExpression: 'attribute_not_exists(account_id)',
    }),
  );
}

export type AccountFlags = Partial<Pick<Account, 'confirmed' | 'suspended' | 'deleted_at'>>;

/** Operator changes to an account's standing; false when the account does not exist. */
export async function updateAccountFlags(deps: Platform, accountId: string, flags: AccountFlags): Promise<boolean> {
  const entries = Object.entries(flags);
  if (entries.length === 0) return true;
  return whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'accounts'),
        Key: { account_id: accountId },
        UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
        ConditionExpression: 'attribute_exists(account_id)',
        ExpressionAttributeNames: Object.fromEntries(entries.map(([key], i) => [`#f${i}`, key])),
        ExpressionAttributeValues: Object.fromEntries(entries.map(([, value], i) => [`:v${i}`, value])),
      }),
    ),
  );
}

/**
 * A condition, for the transaction of a system power-off, that the account is still billing-paused: a deposit that
 * lands after the decision leaves its servers running.
 */
export function stillBillingPausedCheck(deps: Platform, accountId: string) {
  return {
    ConditionCheck: {
      TableName: tableName(deps, 'accounts'),
      Key: { account_id: accountId },
      ConditionExpression: 'billing_paused = :true',
      ExpressionAttributeValues: { ':true': true },
    },
  };
}

/** A condition, for the transaction that finishes bringing a server up, that the account is not billing-paused. */
export function notBillingPausedCheck(deps: Platform, accountId: string) {
  return {
    ConditionCheck: {
      TableName: tableName(deps, 'accounts'),
      Key: { account_id: accountId },
      ConditionExpression: 'billing_paused = :false',
      ExpressionAttributeValues: { ':false': false },
    },
  };
}

/**
 * The condition that an account exists and is still at this credential generation. Accounts from before
 * generations were kept have none, which counts as generation 0.
 */
export function atPasswordVersion(version: number) {
  return {
    ConditionExpression:
      version === 0
        ? 'attribute_exists(account_id) AND (attribute_not_exists(password_version) OR password_version = :version)'
        : 'password_version = :version',
    ExpressionAttributeValues: { ':version': version },
  };
}

const updateAccount = (
  deps: Platform,
  input: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName' | 'Key'>,
  accountId: string,
) =>
  whenConditionHolds(
    deps.dynamo.send(new UpdateCommand({ TableName: tableName(deps, 'accounts'), Key: { account_id: accountId }, ...input })),
  );

/** Keeps the card a top-up saved, for auto-recharge. */
export function saveCard(deps: Platform, accountId: string, customerId: string, paymentMethodId: string): Promise<boolean> {
  return updateAccount(
    deps,
    {
      UpdateExpression: 'SET payment_customer_id = :customer, payment_method_id = :method',
      ConditionExpression: 'attribute_exists(account_id)',
      ExpressionAttributeValues: { ':customer': customerId, ':method': paymentMethodId },
    },
    accountId,
  );
}

/** The customer's auto-recharge settings (failures start again from 0). */
export function setAutoRecharge(deps: Platform, accountId: string, settings: AutoRecharge | null): Promise<boolean> {
  return updateAccount(
    deps,
    {
      UpdateExpression: 'SET auto_recharge = :settings',
      ConditionExpression: 'attribute_exists(account_id)',
      ExpressionAttributeValues: { ':settings': settings },
    },
    accountId,
  );
}

/**
 * Counts an auto-recharge attempt's outcome: a success sets the failures back to 0; a failure adds one, and the one
 * that reaches the limit turns auto-recharge off with the reason. True when this call turned it off.
 */
export async function countRechargeOutcome(deps: Platform, accountId: string, succeeded: boolean, reason = ''): Promise<boolean> {
  const onAutoRecharge = (UpdateExpression: string, values: Record<string, unknown>, condition = 'attribute_type(auto_recharge, :map)') =>
    updateAccount(
      deps,
      {
        UpdateExpression,
        ConditionExpression: condition,
        ExpressionAttributeValues: { ':map': 'M', ...values },
      },
      accountId,
    );
  if (succeeded) return onAutoRecharge('SET auto_recharge.failures = :zero', { ':zero': 0 });
  // Only while it is on: an attempt that ends after another turned it off adds nothing past the limit.
  await onAutoRecharge(
    'ADD auto_recharge.failures :one',
    { ':one': 1, ':on': true },
    'attribute_type(auto_recharge, :map) AND auto_recharge.enabled = :on',
  );
  return updateAccount(
    deps,
    {
      UpdateExpression: 'SET auto_recharge.enabled = :off, auto_recharge.disabled_reason = :reason, auto_recharge.disabled_at = :at',
      ConditionExpression: 'auto_recharge.enabled = :on AND auto_recharge.failures >= :max',
      ExpressionAttributeValues: {
        ':off': false,
        ':on': true,
        ':max': AUTO_RECHARGE_MAX_FAILURES,
        ':reason': `Turned off after ${AUTO_RECHARGE_MAX_FAILURES} failed attempts in a row (last: ${reason})`,
        ':at': deps.clock.now().toISOString(),
      },
    },
    accountId,
  );
}

/**
 * Claims a crossing of the auto-recharge threshold: on condition that auto-recharge is on, the crossings claimed are
 * still one fewer and none is open, so of every review that saw the crossing one claims it. True for that one.
 */
export function claimRechargeCrossing(deps: Platform, accountId: string, crossing: number, at: string): Promise<boolean> {
  const stillClaimed =
    crossing === 1 ? '(attribute_not_exists(recharge_crossing) OR recharge_crossing = :before)' : 'recharge_crossing = :before';
  return updateAccount(
    deps,
    {
      UpdateExpression: 'SET recharge_crossing = :crossing, recharge_open_since = :at',
      ConditionExpression: `auto_recharge.enabled = :on AND ${stillClaimed} AND attribute_not_exists(recharge_open_since)`,
      ExpressionAttributeValues: { ':on': true, ':crossing': crossing, ':before': crossing - 1, ':at': at },
    },
    accountId,
  );
}

/** Ends a crossing, on condition that it is still the one open: the next crossing may be claimed. */
export function endRechargeCrossing(deps: Platform, accountId: string, crossing: number): Promise<boolean> {
  return updateAccount(
    deps,
    {
      UpdateExpression: 'REMOVE recharge_open_since',
      ConditionExpression: 'recharge_crossing = :crossing AND attribute_exists(recharge_open_since)',
      ExpressionAttributeValues: { ':crossing': crossing },
    },
    accountId,
  );
}

/** Records the runway warning level, on condition it is still the one read; true when this call moved it. */
export function moveBalanceNotice(deps: Platform, accountId: string, from: BalanceNotice, to: BalanceNotice): Promise<boolean> {
  return updateAccount(
    deps,
    {
      UpdateExpression: 'SET balance_notice = :to, balance_notice_at = :at',
      ConditionExpression: from === 'none' ? 'attribute_not_exists(balance_notice) OR balance_notice = :from' : 'balance_notice = :from',
      ExpressionAttributeValues: { ':from': from, ':to': to, ':at': deps.clock.now().toISOString() },
    },
    accountId,
  );
}
