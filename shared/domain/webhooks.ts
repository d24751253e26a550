import type { Deps } from './deps';
import { TEST_EVENT_TYPE, type ServiceEvent } from '../schemas/events';
import {
  WEBHOOKS_PER_ACCOUNT,
  type CreateWebhookBody,
  type CreatedWebhook,
  type DeliveryAttempt,
  type WebhookView,
} from '../schemas/webhooks';
import { assertRequestStillAuthorized } from '../store/request-guard';
import { listRecentDeliveryAttempts } from '../store/webhook-deliveries';
import {
  deleteWebhook as deleteWebhookItem,
  getOwnedWebhook,
  insertWebhookWithinLimit,
  listAccountWebhooks,
  WebhookLimitError,
  type WebhookItem,
} from '../store/webhooks';
import { randomBase62 } from '../model/crypto';
import { Failure, notFound } from '../model/errors';
import { eventId } from './events';
import { enqueueDelivery } from './webhook-delivery';
import { sealWebhookSecret } from './webhook-secrets';
import { newSigningSecret } from '../model/webhook-signing';
import { checkReceiverUrl } from '../webhooks/urls';
import { toDeliveryAttemptView, toWebhookView } from './views';

/** GET …/deliveries shows this many of the latest attempts. */
const RECENT_ATTEMPTS = 50;

const webhookNotFound = () => notFound('Webhook not found');

/** Registers an endpoint; its signing secret is returned this once and kept only sealed. */
export async function createWebhook(deps: Deps, accountId: string, body: CreateWebhookBody): Promise<CreatedWebhook> {
  const url = await checkReceiverUrl(body.url, { allowLoopback: deps.config.webhooks.allowLoopback });
  const secret = newSigningSecret();
  const webhookId = `wh_${randomBase62(20)}`;
  const item: WebhookItem = {
    webhook_id: webhookId,
    account_id: accountId,
    url: url.href,
    events: [...new Set(body.events)],
    secret_sealed: await sealWebhookSecret(deps, { account_id: accountId, webhook_id: webhookId }, secret),
    created_at: deps.clock.now().toISOString(),
    disabled_at: null,
    disabled_reason: null,
  };
  try {
    await insertWebhookWithinLimit(deps, item, WEBHOOKS_PER_ACCOUNT);
  } catch (error) {
    if (error instanceof WebhookLimitError)
      throw new Failure('conflict', `Webhook limit reached (at most ${WEBHOOKS_PER_ACCOUNT} per account)`);
    throw error;
  }
  return { ...toWebhookView(item), secret };
}

export async function listWebhooks(deps: Deps, accountId: string): Promise<WebhookView[]> {
  return (await listAccountWebhooks(deps, accountId)).map(toWebhookView);
}

async function ownedWebhook(deps: Deps, accountId: string, webhookId: string | undefined): Promise<WebhookItem> {
  const item = webhookId === undefined ? undefined : await getOwnedWebhook(deps, webhookId, accountId);
  if (!item) throw webhookNotFound();
  return item;
}

export async function deleteWebhook(deps: Deps, accountId: string, webhookId: string | undefined): Promise<{ ok: true; id: string }> {
  const item = await ownedWebhook(deps, accountId, webhookId);
  if (!(await deleteWebhookItem(deps, item))) throw webhookNotFound();
  return { ok: true, id: item.webhook_id };
}

/** Queues a `webhook.test` event for this endpoint alone, signed and retried like any other. */
export async function sendTestEvent(deps: Deps, accountId: string, webhookId: string | undefined): Promise<{ ok: true; event_id: string }> {
  const item = await ownedWebhook(deps, accountId, webhookId);
  const event: ServiceEvent = {
    id: eventId('webhook', item.webhook_id, 'test', deps.ids.uuid()),
    type: TEST_EVENT_TYPE,
    time: deps.clock.now().toISOString(),
    account_id: accountId,
    instance_id: null,
    sequence: null,
    data: { webhook_id: item.webhook_id },
  };
  // A queue takes no condition: the key is read again just before, so a revoked one sends nothing.
  await assertRequestStillAuthorized(deps);
  await enqueueDelivery(deps, item.webhook_id, event);
  return { ok: true, event_id: event.id };
}

export async function listDeliveryAttempts(deps: Deps, accountId: string, webhookId: string | undefined): Promise<DeliveryAttempt[]> {
  const item = await ownedWebhook(deps, accountId, webhookId);
  return (await listRecentDeliveryAttempts(deps, item.webhook_id, RECENT_ATTEMPTS)).map(toDeliveryAttemptView);
}
