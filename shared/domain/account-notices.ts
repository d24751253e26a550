import type { Deps } from './deps';
import type { MailMessage } from '../mail';
import type { ServiceEvent } from '../schemas/events';
import { getAccount } from '../store/accounts';
import { logger } from '../observability';

type AccountEvent = Extract<ServiceEvent, { type: `account.${string}` }>;

export const isAccountEvent = (event: ServiceEvent): event is AccountEvent => event.type.startsWith('account.');

/** The e-mail an account's own event becomes: what happened, what it means for the servers, and where to act. */
export function noticeMail(event: AccountEvent, to: string, consoleUrl: string): MailMessage {
  const billing = `${consoleUrl}#/billing`;
  switch (event.type) {
    case 'account.balance_low': {
      const within = event.data.level === 'below_1h' ? 'less than an hour' : 'less than a day';
      return {
        to,
        subject: `Your balance runs out in ${within}`,
        text: `Your balance is $${event.data.balance_usd}. At what your servers cost now, it runs out in ${within}; then billing is paused and running servers are powered off.\n\nAdd funds: ${billing}`,
      };
    }
    case 'account.billing_paused':
      return {
        to,
        subject: 'Billing paused: your servers are being powered off',
        text: `Your balance is $${event.data.balance_usd}, so billing is paused: running servers are powered off (stopped servers are billed at 25 %), and they cannot be powered on, rebooted or resized until the balance is above zero.\n\nAdd funds: ${billing}`,
      };
    case 'account.billing_resumed':
      return {
        to,
        subject: 'Billing resumed',
        text: `Your balance is $${event.data.balance_usd} again, so billing is no longer paused. Servers powered off during the pause stay off until you power them on.\n\nBilling: ${billing}`,
      };
    case 'account.auto_recharge_disabled':
      return {
        to,
        subject: 'Auto-recharge is turned off',
        text: `${event.data.reason}. Your card will not be charged again until you turn auto-recharge back on.\n\nBilling: ${billing}`,
      };
  }
}

/** E-mails an account's own event to its address (at least once: a redelivered event may mail twice). */
export async function mailAccountNotice(deps: Deps, event: AccountEvent): Promise<void> {
  const account = await getAccount(deps, event.account_id);
  if (!account || account.deleted_at !== null) return;
  await deps.mail.send(noticeMail(event, account.email, deps.config.console.url));
  logger.info('account notice mailed', { account_id: event.account_id, type: event.type, event_id: event.id });
}
