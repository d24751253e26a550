import type { Deps } from './deps';
import { open, seal, type SecretContext } from '../secrets';
import type { WebhookItem } from '../store/webhooks';

type WebhookIds = Pick<WebhookItem, 'account_id' | 'webhook_id'>;

/** Binds a signing secret to its account and webhook: copied onto another record, it does not open. */
const contextOf = ({ account_id, webhook_id }: WebhookIds): SecretContext => ({ purpose: 'webhook-secret', account_id, webhook_id });

export async function sealWebhookSecret(deps: Deps, ids: WebhookIds, secret: string): Promise<string> {
  return seal(deps, secret, contextOf(ids));
}

export async function openWebhookSecret(deps: Deps, webhook: WebhookItem): Promise<string> {
  return open(deps, webhook.secret_sealed, contextOf(webhook));
}
