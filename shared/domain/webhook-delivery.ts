import type { Deps } from './deps';
import type { DeliveryMessage } from '../events/ports';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import type { ServiceEvent } from '../schemas/events';
import { recordDeliveryAttempt } from '../store/webhook-deliveries';
import { disableWebhook, getWebhook, listAccountWebhooks, markWebhookFailing, markWebhookHealthy } from '../store/webhooks';
import { postDelivery, type SendOutcome } from '../webhooks/sender';
import { openWebhookSecret } from './webhook-secrets';
import { signedHeaders } from '../model/webhook-signing';
import type { Resolver } from '../webhooks/urls';
import { isAccountEvent } from './account-notices';

const DISABLED_REASON = 'Every delivery failed for 3 days';

/** The wait before retry number `attempt` (the first retry follows attempt 1): doubling from the base, capped. */
function retryDelayMs(attempt: number, settings: { retryBaseMs: number; retryMaxDelayMs: number }): number {
  return Math.min(settings.retryBaseMs * 2 ** (attempt - 1), settings.retryMaxDelayMs);
}

/** Queues the first attempt of an event for one endpoint. */
export async function enqueueDelivery(deps: Deps, webhookId: string, event: ServiceEvent, now = deps.clock.now()): Promise<void> {
  const at = now.toISOString();
  await deps.transports.deliveries.send({ webhook_id: webhookId, event, attempt: 1, first_attempt_at: at, not_before: at }, 0);
}

/** Queues the event for every enabled endpoint of its account that subscribed to its type. */
export async function fanOut(deps: Deps, event: ServiceEvent): Promise<number> {
  const subscribed = (await listAccountWebhooks(deps, event.account_id)).filter(
    (webhook) => webhook.disabled_at === null && (webhook.events as string[]).includes(event.type),
  );
  for (const webhook of subscribed) await enqueueDelivery(deps, webhook.webhook_id, event);
  // An account's own events are e-mailed to it as well, by the mail sender.
  if (isAccountEvent(event)) await deps.transports.authMail.send({ kind: 'account-notice', event });
  return subscribed.length;
}

const succeeded = (outcome: SendOutcome) => outcome.status !== null && outcome.status >= 200 && outcome.status < 300;

/**
 * One delivery attempt. A failed one is retried by queueing the next attempt (doubling waits, for the retry
 * window); an endpoint that has failed for the disable window without a single success is disabled. Throws only
 * on the service's own faults, so the queue redelivers the message: at least once, never silently dropped.
 */
export async function deliverWebhook(deps: Deps, message: DeliveryMessage, now = deps.clock.now(), resolve?: Resolver): Promise<void> {
  const settings = deps.config.webhooks;
  const wait = Date.parse(message.not_before) - now.getTime();
  if (wait > 0) {
    // SQS delays a message 15 minutes at most: a longer wait is made of several.
    await deps.transports.deliveries.send(message, wait);
    return;
  }
  const webhook = await getWebhook(deps, message.webhook_id);
  if (!webhook || webhook.disabled_at !== null) return;

  const body = JSON.stringify(message.event);
  const secret = await openWebhookSecret(deps, webhook);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'vps-service-webhooks/1.0',
    ...signedHeaders(secret, message.event.id, Math.floor(now.getTime() / 1000), body),
  };
  const outcome = await postDelivery(new URL(webhook.url), body, headers, {
    policy: { allowLoopback: settings.allowLoopback },
    timeoutMs: settings.timeoutMs,
    resolve,
  });
  const ok = succeeded(outcome);
  const at = deps.clock.now().toISOString();
  await recordDeliveryAttempt(deps, webhook.webhook_id, {
    id: deps.ids.uuid(),
    event_id: message.event.id,
    event_type: message.event.type,
    attempt: message.attempt,
    status: ok ? 'succeeded' : 'failed',
    response_code: outcome.status,
    error: ok ? null : (outcome.error ?? `the receiver answered ${outcome.status}`),
    time: at,
  });
  countMetric(metricNames.webhookDeliveries);
  if (ok) {
    if (webhook.failing_since !== undefined) await markWebhookHealthy(deps, webhook.webhook_id);
    return;
  }

  countMetric(metricNames.webhookDeliveryFailures);
  const failing = await markWebhookFailing(deps, webhook.webhook_id, at);
  if (!failing) return;
  if (failing.failing_since && now.getTime() - Date.parse(failing.failing_since) >= settings.disableAfterMs) {
    if (await disableWebhook(deps, webhook.webhook_id, at, DISABLED_REASON)) {
      countMetric(metricNames.webhooksDisabled);
      logger.warn('webhook disabled after failing', { webhook_id: webhook.webhook_id });
    }
    return;
  }
  const delay = retryDelayMs(message.attempt, settings);
  if (now.getTime() + delay - Date.parse(message.first_attempt_at) > settings.retryWindowMs) {
    logger.warn('webhook delivery given up after the retry window', { webhook_id: webhook.webhook_id, event_id: message.event.id });
    return;
  }
  await deps.transports.deliveries.send(
    { ...message, attempt: message.attempt + 1, not_before: new Date(now.getTime() + delay).toISOString() },
    delay,
  );
}
