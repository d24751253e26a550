import { tableName, type Platform } from '../platform';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from '../model/zod';
import { eventTypeSchema } from '../model/webhook-events';
import { readAll, transactWrite, updatedWhenConditionHolds, whenConditionHolds } from './dynamo-helpers';
import { giveBackCountedPlace, takeCountedPlace } from './counters';
import { requestGuardItems, throwIfGuardFailed } from './request-guard';

export const webhookItemSchema = z.object({
  webhook_id: z.string(),
  account_id: z.string(),
  url: z.string(),
  events: z.array(eventTypeSchema),
  /** The signing secret, sealed (never stored in the clear). */
  secret_sealed: z.string(),
  created_at: z.string(),
  /** When the current run of failures began; absent while the endpoint succeeds. */
  failing_since: z.string().optional(),
  disabled_at: z.string().nullable(),
  disabled_reason: z.string().nullable(),
});
export type WebhookItem = z.infer<typeof webhookItemSchema>;

/** What the account index holds: everything but the sealed secret. */
export const webhookSummarySchema = webhookItemSchema.omit({ secret_sealed: true });
export type WebhookSummary = z.infer<typeof webhookSummarySchema>;

export class WebhookLimitError extends Error {
  override readonly name = 'WebhookLimitError';
}

/** One counter per account, moved in the same transaction as the endpoint it counts. */
const countName = (accountId: string) => `webhooks#${accountId}`;

/**
 * Records a new endpoint unless the account already has `limit`: concurrent creates can never pass it. In a Bearer
 * request it also holds only while the request's key is active (a 401 otherwise).
 */
export async function insertWebhookWithinLimit(deps: Platform, item: WebhookItem, limit: number): Promise<void> {
  try {
    await transactWrite(deps, {
      TransactItems: [
        takeCountedPlace(deps, countName(item.account_id), limit),
        {
          Put: {
            TableName: tableName(deps, 'webhooks'),
            Item: webhookItemSchema.parse(item),
            ConditionExpression: 'attribute_not_exists(webhook_id)',
          },
        },
        ...requestGuardItems(deps),
      ],
    });
  } catch (error) {
    throwIfGuardFailed(error, 2);
    if (error instanceof TransactionCanceledException && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') {
      throw new WebhookLimitError(`at most ${limit} webhooks per account`);
    }
    throw error;
  }
}

export async function getWebhook(deps: Platform, webhookId: string): Promise<WebhookItem | undefined> {
  const { Item } = await deps.dynamo.send(
    new GetCommand({ TableName: tableName(deps, 'webhooks'), Key: { webhook_id: webhookId }, ConsistentRead: true }),
  );
  return Item ? webhookItemSchema.parse(Item) : undefined;
}

/** The caller's endpoint, or undefined when it is missing or someone else's: the same 404. */
export async function getOwnedWebhook(deps: Platform, webhookId: string, accountId: string): Promise<WebhookItem | undefined> {
  const item = await getWebhook(deps, webhookId);
  return item?.account_id === accountId ? item : undefined;
}

export async function listAccountWebhooks(deps: Platform, accountId: string): Promise<WebhookSummary[]> {
  return readAll(
    deps,
    {
      kind: 'query',
      TableName: tableName(deps, 'webhooks'),
      IndexName: 'by_account',
      KeyConditionExpression: 'account_id = :account',
      ExpressionAttributeValues: { ':account': accountId },
    },
    webhookSummarySchema,
  );
}

/** Removes the endpoint and gives its place back; false when it was already gone, a 401 when the request's key is. */
export async function deleteWebhook(deps: Platform, item: WebhookItem): Promise<boolean> {
  try {
    await transactWrite(deps, {
      TransactItems: [
        {
          Delete: {
            TableName: tableName(deps, 'webhooks'),
            Key: { webhook_id: item.webhook_id },
            ConditionExpression: 'attribute_exists(webhook_id)',
          },
        },
        giveBackCountedPlace(deps, countName(item.account_id)),
        ...requestGuardItems(deps),
      ],
    });
    return true;
  } catch (error) {
    throwIfGuardFailed(error, 2);
    if (error instanceof TransactionCanceledException && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
    throw error;
  }
}

/**
 * Notes a failed delivery: the first failure of a run starts `failing_since`, later ones keep it. Returns the
 * endpoint as it now is, or undefined when it is gone.
 */
export async function markWebhookFailing(deps: Platform, webhookId: string, at: string): Promise<WebhookItem | undefined> {
  const item = await updatedWhenConditionHolds(deps, {
    TableName: tableName(deps, 'webhooks'),
    Key: { webhook_id: webhookId },
    UpdateExpression: 'SET failing_since = if_not_exists(failing_since, :at)',
    ConditionExpression: 'attribute_exists(webhook_id)',
    ExpressionAttributeValues: { ':at': at },
  });
  return item ? webhookItemSchema.parse(item) : undefined;
}

/** A success ends a run of failures. */
export async function markWebhookHealthy(deps: Platform, webhookId: string): Promise<void> {
  await whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'webhooks'),
        Key: { webhook_id: webhookId },
        UpdateExpression: 'REMOVE failing_since',
        ConditionExpression: 'attribute_exists(failing_since)',
      }),
    ),
  );
}

/** Disables an enabled endpoint, once (the change itself publishes webhook.disabled). */
export async function disableWebhook(deps: Platform, webhookId: string, at: string, reason: string): Promise<boolean> {
  return whenConditionHolds(
    deps.dynamo.send(
      new UpdateCommand({
        TableName: tableName(deps, 'webhooks'),
        Key: { webhook_id: webhookId },
        UpdateExpression: 'SET disabled_at = :at, disabled_reason = :reason',
        ConditionExpression: 'attribute_exists(webhook_id) AND disabled_at = :null',
        ExpressionAttributeValues: { ':at': at, ':reason': reason, ':null': null },
      }),
    ),
  );
}
