import { tableName, type Platform } from '../platform';
import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import { TTL_ATTRIBUTE } from '../tables';
import { topUpKindSchema, topUpStatusSchema } from '../model/payments';
import { batchGetAll, updatedWhenConditionHolds, whenConditionHolds } from './dynamo-helpers';
import { recordLedgerEntry, type LedgerEntry, type TransactItem } from './ledger';

const topUpSchema = z.object({
  top_up_id: z.string(),
  account_id: z.string(),
  kind: topUpKindSchema,
  amount_cents: z.number().int().positive(),
  status: topUpStatusSchema,
  /** The provider's checkout (`cs_…`) and its page; null until the provider has answered (and for auto-recharge). */
  provider_session_id: z.string().nullable(),
  checkout_url: z.string().nullable(),
  /** The provider's payment (`pi_…`), once known. */
  payment_intent_id: z.string().nullable(),
  /** Keep the card for auto-recharge. */
  save_card: z.boolean(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  paid_at: z.string().nullable(),
  /** Everything the provider has refunded of it, in cents: refunds are debited as this grows. */
  refunded_cents: z.number().int().nonnegative(),
  failure_reason: z.string().nullable(),
});
export type TopUp = z.infer<typeof topUpSchema>;

/** The one partition of the sparse index of open top-ups: there are few at any time. */
const OPEN = 'open';

/** Records a new top-up; false when one with its id is recorded already. */
export function insertTopUp(deps: Platform, topUp: TopUp): Promise<boolean> {
  return whenConditionHolds(
    deps.dynamo.send(
      new PutCommand({
        TableName: tableName(deps, 'topUps'),
        Item: { ...topUpSchema.parse(topUp), open_shard: OPEN },
        ConditionExpression: 'attribute_not_exists(top_up_id)',
      }),
    ),
  );
}

export async function getTopUp(deps: Platform, topUpId: string): Promise<TopUp | undefined> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'topUps'), Key: { top_up_id: topUpId }, ConsistentRead: true }),
  );
  return Item ? topUpSchema.parse(Item) : undefined;
}

/** The top-ups an index query names (the indexes hold keys only), read by key, consistently. */
async function topUpsOf(deps: Platform, query: Omit<QueryCommandInput, 'TableName'>): Promise<TopUp[]> {
  const { Items = [] } = await deps.dynamo.send(new QueryCommand({ TableName: tableName(deps, 'topUps'), ...query }));
  return batchGetAll(
    deps,
    tableName(deps, 'topUps'),
    Items.map((item) => ({ top_up_id: item.top_up_id })),
    topUpSchema,
  );
}

/** The account's latest top-ups, newest first. */
export async function listLatestTopUps(deps: Platform, accountId: string, limit: number): Promise<TopUp[]> {
  const found = await topUpsOf(deps, {
    IndexName: 'by_account',
    KeyConditionExpression: 'account_id = :account',
    ExpressionAttributeValues: { ':account': accountId },
    ScanIndexForward: false,
    Limit: limit,
  });
  return found.sort((a, b) => b.created_at.localeCompare(a.created_at));
}

/** Open top-ups made before `before`, oldest first (at most `limit`). */
export async function listOpenTopUps(deps: Platform, before: string, limit: number): Promise<TopUp[]> {
  const found = await topUpsOf(deps, {
    IndexName: 'open_since',
    KeyConditionExpression: 'open_shard = :open AND created_at < :before',
    ExpressionAttributeValues: { ':open': OPEN, ':before': before },
    Limit: limit,
  });
  return found.filter((topUp) => topUp.status === 'open').sort((a, b) => a.created_at.localeCompare(b.created_at));
}

/** Records the provider's checkout for a top-up that has none yet; the top-up as it is then, or undefined if it had one. */
export async function attachCheckout(
  deps: Platform,
  topUpId: string,
  checkout: { sessionId: string; url: string; expiresAt: string },
): Promise<TopUp | undefined> {
  const item = await updatedWhenConditionHolds(deps, {
    TableName: tableName(deps, 'topUps'),
    Key: { top_up_id: topUpId },
    UpdateExpression: 'SET provider_session_id = :session, checkout_url = :url, expires_at = :expires',
    ConditionExpression: 'attribute_exists(top_up_id) AND provider_session_id = :none',
    ExpressionAttributeValues: { ':session': checkout.sessionId, ':url': checkout.url, ':expires': checkout.expiresAt, ':none': null },
  });
  return item ? topUpSchema.parse(item) : undefined;
}

/** Records the payment an auto-recharge made, before its outcome is known. */
export async function attachPayment(deps: Platform, topUpId: string, paymentIntentId: string): Promise<void> {
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'topUps'),
        Key: { top_up_id: topUpId },
        UpdateExpression: 'SET payment_intent_id = :payment',
        ConditionExpression: 'attribute_exists(top_up_id) AND payment_intent_id = :none',
        ExpressionAttributeValues: { ':payment': paymentIntentId, ':none': null },
      }),
    ),
  );
}

/** The write that marks a top-up paid, in the transaction of its credit: the provider's ids kept, whichever came first. */
function markPaid(
  deps: Platform,
  topUp: TopUp,
  paid: { sessionId: string | null; paymentIntentId: string | null; at: string },
): TransactItem {
  return {
    Update: {
      TableName: tableName(deps, 'topUps'),
      Key: { top_up_id: topUp.top_up_id },
      UpdateExpression:
        'SET #status = :paid, paid_at = :at, provider_session_id = :session, payment_intent_id = :payment, failure_reason = :none REMOVE open_shard',
      ConditionExpression: 'account_id = :account',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':paid': 'paid',
        ':at': paid.at,
        ':session': paid.sessionId ?? topUp.provider_session_id,
        ':payment': paid.paymentIntentId ?? topUp.payment_intent_id,
        ':account': topUp.account_id,
        ':none': null,
      },
    },
  };
}

/**
 * Credits a paid top-up: the ledger entry (keyed by the provider's payment), the balance and the top-up's status in
 * one transaction. False when the entry was booked already: the credit happens once, however often it is reported.
 */
export function creditTopUp(
  deps: Platform,
  topUp: TopUp,
  entry: LedgerEntry,
  paid: { sessionId: string | null; paymentIntentId: string | null },
): Promise<boolean> {
  return recordLedgerEntry(deps, entry, markPaid(deps, topUp, { ...paid, at: entry.created_at }));
}

/**
 * Ends an open top-up without payment (expired, failed). An auto-recharge's failure also counts against the account's
 * auto-recharge in the same transaction. False when it was not open any more.
 */
export async function closeTopUp(deps: Platform, topUpId: string, status: 'expired' | 'failed', reason: string | null): Promise<boolean> {
  return whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'topUps'),
        Key: { top_up_id: topUpId },
        UpdateExpression: 'SET #status = :status, failure_reason = :reason REMOVE open_shard',
        ConditionExpression: '#status = :open',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': status, ':reason': reason, ':open': 'open' },
      }),
    ),
  );
}

/**
 * Debits what the provider refunded of a top-up since the refunds last booked: the entry (keyed by the charge and
 * the refunded total, so the same total is booked once), the balance and the top-up's refunded total together, on
 * condition that the total booked is still `topUp.refunded_cents`. False when it moved meanwhile: read and try again.
 */
export function recordRefund(deps: Platform, topUp: TopUp, refundedCents: number, entry: LedgerEntry): Promise<boolean> {
  return recordLedgerEntry(deps, entry, {
    Update: {
      TableName: tableName(deps, 'topUps'),
      Key: { top_up_id: topUp.top_up_id },
      UpdateExpression: 'SET refunded_cents = :refunded',
      ConditionExpression: 'refunded_cents = :booked',
      ExpressionAttributeValues: { ':refunded': refundedCents, ':booked': topUp.refunded_cents },
    },
  });
}

/** How long a provider's event id is remembered: longer than the provider retries one (Stripe: 3 days). */
const EVENT_MEMORY_SECONDS = 30 * 86_400;
const eventKey = (eventId: string) => ({ name: `payment-event#${eventId}` });

export async function paymentEventSeen(deps: Platform, eventId: string): Promise<boolean> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'counters'), Key: eventKey(eventId), ConsistentRead: true }),
  );
  return Item !== undefined;
}

/** Remembers an event once everything it led to is written: a replay is answered without doing anything. */
export async function rememberPaymentEvent(deps: Platform, eventId: string, outcome: string): Promise<void> {
  await deps.dynamo.send(
    new PutCommand({
      TableName: tableName(deps, 'counters'),
      Item: {
        ...eventKey(eventId),
        outcome,
        [TTL_ATTRIBUTE]: Math.floor(deps.clock.now().getTime() / 1000) + EVENT_MEMORY_SECONDS,
      },
    }),
  );
}
