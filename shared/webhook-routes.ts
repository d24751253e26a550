import type { RouteDefinition } from './routes';

/** The webhook endpoints: Bearer key and the general rate limit, like the instance routes. */
export const webhookRoutes: readonly RouteDefinition[] = [
  {
    name: 'CreateWebhook',
    method: 'POST',
    path: '/api/v1/webhooks',
    entry: 'functions/api/create-webhook.ts',
    auth: 'bearer',
    // One transaction: the account's webhook count and the new endpoint.
    access: { tables: { webhooks: ['PutItem'], counters: ['UpdateItem'] }, secrets: ['seal'] },
  },
  {
    name: 'ListWebhooks',
    method: 'GET',
    path: '/api/v1/webhooks',
    entry: 'functions/api/list-webhooks.ts',
    auth: 'bearer',
    access: { tables: { webhooks: ['Query'] } },
  },
  {
    name: 'DeleteWebhook',
    method: 'DELETE',
    path: '/api/v1/webhooks/{webhook_id}',
    entry: 'functions/api/delete-webhook.ts',
    auth: 'bearer',
    access: { tables: { webhooks: ['GetItem', 'DeleteItem'], counters: ['UpdateItem'] } },
  },
  {
    name: 'TestWebhook',
    method: 'POST',
    path: '/api/v1/webhooks/{webhook_id}/test',
    entry: 'functions/api/test-webhook.ts',
    auth: 'bearer',
    access: { tables: { webhooks: ['GetItem'] }, webhookQueue: true },
  },
  {
    name: 'ListWebhookDeliveries',
    method: 'GET',
    path: '/api/v1/webhooks/{webhook_id}/deliveries',
    entry: 'functions/api/list-webhook-deliveries.ts',
    auth: 'bearer',
    access: { tables: { webhooks: ['GetItem'], webhookDeliveries: ['Query'] } },
  },
];
