import * as z from '../model/zod';
import { requestGuardAccess } from '../access';
import { serviceEventSchema } from '../schemas/events';
import {
  createWebhookBodySchema,
  createdWebhookSchema,
  deletedWebhookSchema,
  deliveryAttemptSchema,
  webhookSchema,
  webhookTestResultSchema,
} from '../schemas/webhooks';
import type { BearerRoute, RouteDoc } from './contract';
import { bearerErrors, ok, rateLimitHeaders, tooLarge } from './docs';

/** The webhook endpoints: Bearer key and the general rate limit, and writes bound to the key, like the instance routes. */

const tags = ['webhooks'];
const webhookPath = z.object({ webhook_id: z.string().meta({ description: 'The webhook id (`wh_…`).' }) });
const Webhook = webhookSchema.meta({ id: 'Webhook' });
const ServiceEvent = serviceEventSchema.meta({ id: 'ServiceEvent' });
const headers = rateLimitHeaders(true);
const notFound = { 404: 'Webhook not found (missing, or owned by someone else).' };
const webhooksPath = '/api/v1/webhooks';
const webhookItemPath = `${webhooksPath}/{webhook_id}`;

export const createWebhookRoute = {
  name: 'CreateWebhook',
  method: 'POST',
  path: webhooksPath,
  entry: 'functions/api/create-webhook.ts',
  auth: 'bearer',
  body: createWebhookBodySchema,
  // One transaction: the account's webhook count, the new endpoint and the key's and account's standing.
  access: { tables: { ...requestGuardAccess, webhooks: ['PutItem'], counters: ['UpdateItem'] }, secrets: ['seal'] },
  doc: {
    operationId: 'createWebhook',
    summary: 'Register a receiver URL for events; the signing secret is returned only here',
    description:
      'The URL must be https on a public host (no loopback, private, link-local, CGNAT or metadata address, nor an IPv6 address that carries one, checked again at every delivery) and at most 2,048 characters; at most 10 webhooks per account. Keep the `secret`: it is never shown again.',
    tags,
    responses: {
      201: ok('Registered.', createdWebhookSchema, headers),
      ...bearerErrors([401, 403], {
        400: 'Invalid request: the field and why (not https, a private or unresolvable host, an unknown event type, a URL over 2,048 characters).',
        409: 'Webhook limit reached (at most 10 per account).',
        413: tooLarge,
      }),
    },
  },
} as const satisfies BearerRoute;

export const listWebhooksRoute = {
  name: 'ListWebhooks',
  method: 'GET',
  path: webhooksPath,
  entry: 'functions/api/list-webhooks.ts',
  auth: 'bearer',
  access: { tables: { webhooks: ['Query'] } },
  doc: {
    operationId: 'listWebhooks',
    summary: "The caller's webhooks, without their secrets",
    description: 'Every webhook of the account, oldest first; `enabled` is false once one was disabled after failing for 3 days.',
    tags,
    responses: { 200: ok('The webhooks.', z.array(Webhook), headers), ...bearerErrors([401, 403]) },
  },
} as const satisfies BearerRoute;

export const deleteWebhookRoute = {
  name: 'DeleteWebhook',
  method: 'DELETE',
  path: webhookItemPath,
  entry: 'functions/api/delete-webhook.ts',
  auth: 'bearer',
  params: webhookPath,
  access: { tables: { ...requestGuardAccess, webhooks: ['GetItem', 'DeleteItem'], counters: ['UpdateItem'] } },
  doc: {
    operationId: 'deleteWebhook',
    summary: 'Remove a webhook; nothing more is delivered to it',
    description: 'Deliveries already queued for it are dropped; its place counts towards the limit of 10 no more.',
    tags,
    responses: { 200: ok('Removed.', deletedWebhookSchema, headers), ...bearerErrors([401, 403], notFound) },
  },
} as const satisfies BearerRoute;

export const testWebhookRoute = {
  name: 'TestWebhook',
  method: 'POST',
  path: `${webhookItemPath}/test`,
  entry: 'functions/api/test-webhook.ts',
  auth: 'bearer',
  params: webhookPath,
  access: { tables: { webhooks: ['GetItem'] }, webhookQueue: true },
  doc: {
    operationId: 'testWebhook',
    summary: 'Send a signed `webhook.test` event to this webhook alone',
    description: 'Queued and retried like any event; follow it in the deliveries. Answers the id the test event carries.',
    tags,
    responses: { 202: ok('Queued.', webhookTestResultSchema, headers), ...bearerErrors([401, 403], notFound) },
  },
} as const satisfies BearerRoute;

export const listWebhookDeliveriesRoute = {
  name: 'ListWebhookDeliveries',
  method: 'GET',
  path: `${webhookItemPath}/deliveries`,
  entry: 'functions/api/list-webhook-deliveries.ts',
  auth: 'bearer',
  params: webhookPath,
  access: { tables: { webhooks: ['GetItem'], webhookDeliveries: ['Query'] } },
  doc: {
    operationId: 'listWebhookDeliveries',
    summary: 'The latest 50 delivery attempts, newest first (kept 7 days)',
    description: 'Each attempt with its event, its number (1, then each retry), the outcome, the receiver’s status code and the time.',
    tags,
    responses: { 200: ok('The attempts.', z.array(deliveryAttemptSchema), headers), ...bearerErrors([401, 403], notFound) },
  },
} as const satisfies BearerRoute;

export const webhookRoutes = [
  createWebhookRoute,
  listWebhooksRoute,
  deleteWebhookRoute,
  testWebhookRoute,
  listWebhookDeliveriesRoute,
] as const;

/** What each delivery POSTs to a receiver: the document's one webhook, not a route of ours. */
export const webhookDeliveryDoc = {
  name: 'serviceEvent',
  body: ServiceEvent,
  doc: {
    operationId: 'receiveEvent',
    tags,
    summary: 'What your receiver gets: one event per POST, signed per Standard Webhooks',
    description:
      'Headers `webhook-id` (the event id: the same on every retry), `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` keyed with the secret after `whsec_`, base64-decoded). Answer 2xx within 10 s; anything else is retried with doubling waits for 24 hours, and an endpoint failing for 3 days is disabled. Redirects are not followed.',
    responses: { 200: { description: 'Any 2xx acknowledges the event.' } },
  } satisfies RouteDoc,
};
