import type { FunctionAccess } from '../shared/access';

/**
 * The functions that carry events, shared by the CDK stack and the stack tests: the stream function publishing
 * committed changes to the bus, the fan-out from the bus to webhook deliveries, and the deliverer; and the sender of
 * the console's e-mail, which works through its own queue.
 */
export interface EventFunctionDefinition {
  readonly entry: string;
  readonly access: FunctionAccess;
}

export const eventFunctions = {
  publishChanges: {
    entry: 'functions/events/publish-changes.ts',
    // Reads the instances, jobs, webhooks and accounts streams through its event source mappings; no table data.
    access: { publishesEvents: true },
  },
  fanOut: {
    entry: 'functions/events/fan-out.ts',
    // An account's own events are e-mailed to it too: queued for the mail sender.
    access: { tables: { webhooks: ['Query'] }, webhookQueue: true, authMailQueue: true },
  },
  deliverWebhooks: {
    entry: 'functions/events/deliver-webhooks.ts',
    access: { tables: { webhooks: ['GetItem', 'UpdateItem'], webhookDeliveries: ['PutItem'] }, webhookQueue: true, secrets: ['open'] },
  },
  sendAuthMail: {
    entry: 'functions/events/send-auth-mail.ts',
    access: {
      tables: { logins: ['GetItem', 'PutItem'], accounts: ['GetItem', 'PutItem'], authTokens: ['PutItem'] },
      sendsMail: true,
    },
  },
} as const satisfies Record<string, EventFunctionDefinition>;

export type EventFunctionName = keyof typeof eventFunctions;
