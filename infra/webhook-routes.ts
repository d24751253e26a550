import type { RouteDefinition } from './routes';

/** The webhook endpoints: Bearer key and the general rate limit, like the instance routes. */
export const webhookRoutes: readonly RouteDefinition[] = [
  {
    name: 'CreateWebhook',
    method: 'POST',
    path: '/api/v1/webhooks',
    entry: 'functions/api/create-webhook.ts',
    auth: 'bearer',
    access: { tables: { webhooks: 'write', counters: 'readwrite' }, sealingKey: true },
  },
  {
    name: 'ListWebhooks',
    method: 'GET',
    path: '/api/v1/webhooks',
    entry: 'functions/api/list-webhooks.ts',
    auth: 'bearer',
    access: { tables: { webhooks: 'read' } },
  },
  {
    name: 'DeleteWebhook',
    method: 'DELETE',
    path: '/api/v1/webhooks/{webhook_id}',
    entry: 'functions/api/delete-webhook.ts',
    auth: 'bearer',
    access: { tables: { webhooks: 'readwrite', counters: 'readwrite' } },
  },
  {
    name: 'TestWebhook',
    method: 'POST',
    path: '/api/v1/webhooks/{webhook_id}/test',
    entry: 'functions/api/test-webhook.ts',
    auth: 'bearer',
    access: { tables: { webhooks: 'read' }, webhookQueue: true },
  },
  {
    name: 'ListWebhookDeliveries',
    method: 'GET',
    path: '/api/v1/webhooks/{webhook_id}/deliveries',
    entry: 'functions/api/list-webhook-deliveries.ts',
    auth: 'bearer',
    access: { tables: { webhooks: 'read', webhookDeliveries: 'read' } },
  },
];
