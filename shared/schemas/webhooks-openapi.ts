import type { ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
import { serviceEventSchema } from './events';
import {
  createWebhookBodySchema,
  createdWebhookSchema,
  deletedWebhookSchema,
  deliveryAttemptSchema,
  webhookSchema,
  webhookTestResultSchema,
} from './webhooks';

/** What the OpenAPI document's own helpers build, so that these paths read like the others. */
export interface OpenApiHelpers {
  readonly security: RouteConfig['security'];
  readonly json: (schema: z.ZodType) => { 'application/json': { schema: z.ZodType } };
  readonly headers: ResponseConfig['headers'];
  /** The error responses every Bearer route can give (401, 403, 429, 500), plus those asked for by status. */
  readonly errors: (texts: Record<number, string>) => Record<string, ResponseConfig>;
}

const tags = ['webhooks'];
const webhookPath = z.object({ webhook_id: z.string().meta({ description: 'The webhook id (`wh_…`).' }) });
const Webhook = webhookSchema.meta({ id: 'Webhook' });
const ServiceEvent = serviceEventSchema.meta({ id: 'ServiceEvent' });

/** The webhook endpoints, and what each delivery POSTs to a receiver. */
export function webhookOpenApi({ security, json, headers, errors }: OpenApiHelpers): { paths: RouteConfig[]; delivery: RouteConfig } {
  const notFound = { 404: 'Webhook not found (missing, or owned by someone else).' };
  const paths: RouteConfig[] = [
    {
      method: 'post',
      path: '/api/v1/webhooks',
      operationId: 'createWebhook',
      summary: 'Register a receiver URL for events; the signing secret is returned only here',
      description:
        'The URL must be https on a public host (no loopback, private, link-local, CGNAT or metadata address, checked again at every delivery) and at most 2,048 characters; at most 10 webhooks per account. Keep the `secret`: it is never shown again.',
      tags,
      security,
      request: { body: { required: true, content: json(createWebhookBodySchema) } },
      responses: {
        201: { description: 'Registered.', headers, content: json(createdWebhookSchema) },
        ...errors({
          400: 'Invalid request: the field and why (not https, a private or unresolvable host, an unknown event type, a URL over 2,048 characters).',
          409: 'Webhook limit reached (at most 10 per account).',
          413: 'Request body too large (limit 16 KiB).',
        }),
      },
    },
    {
      method: 'get',
      path: '/api/v1/webhooks',
      operationId: 'listWebhooks',
      summary: "The caller's webhooks, without their secrets",
      description: 'Every webhook of the account, oldest first; `enabled` is false once one was disabled after failing for 3 days.',
      tags,
      security,
      responses: { 200: { description: 'The webhooks.', headers, content: json(z.array(Webhook)) }, ...errors({}) },
    },
    {
      method: 'delete',
      path: '/api/v1/webhooks/{webhook_id}',
      operationId: 'deleteWebhook',
      summary: 'Remove a webhook; nothing more is delivered to it',
      description: 'Deliveries already queued for it are dropped; its place counts towards the limit of 10 no more.',
      tags,
      security,
      request: { params: webhookPath },
      responses: { 200: { description: 'Removed.', headers, content: json(deletedWebhookSchema) }, ...errors(notFound) },
    },
    {
      method: 'post',
      path: '/api/v1/webhooks/{webhook_id}/test',
      operationId: 'testWebhook',
      summary: 'Send a signed `webhook.test` event to this webhook alone',
      description: 'Queued and retried like any event; follow it in the deliveries. Answers the id the test event carries.',
      tags,
      security,
      request: { params: webhookPath },
      responses: { 202: { description: 'Queued.', headers, content: json(webhookTestResultSchema) }, ...errors(notFound) },
    },
    {
      method: 'get',
      path: '/api/v1/webhooks/{webhook_id}/deliveries',
      operationId: 'listWebhookDeliveries',
      summary: 'The latest 50 delivery attempts, newest first (kept 7 days)',
      description: 'Each attempt with its event, its number (1, then each retry), the outcome, the receiver’s status code and the time.',
      tags,
      security,
      request: { params: webhookPath },
      responses: { 200: { description: 'The attempts.', headers, content: json(z.array(deliveryAttemptSchema)) }, ...errors(notFound) },
    },
  ];
  const delivery: RouteConfig = {
    method: 'post',
    path: 'serviceEvent',
    operationId: 'receiveEvent',
    tags,
    summary: 'What your receiver gets: one event per POST, signed per Standard Webhooks',
    description:
      'Headers `webhook-id` (the event id: the same on every retry), `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` keyed with the secret after `whsec_`, base64-decoded). Answer 2xx within 10 s; anything else is retried with doubling waits for 24 hours, and an endpoint failing for 3 days is disabled. Redirects are not followed.',
    request: { body: { required: true, content: json(ServiceEvent) } },
    responses: { 200: { description: 'Any 2xx acknowledges the event.' } },
  };
  return { paths, delivery };
}
