import * as z from '../model/zod';

export const errorBodySchema = z.object({
  error: z.string().meta({ description: 'What went wrong; the texts of the interface specification where it gives one.' }),
  request_id: z.string(),
  status: z.string().optional().meta({ description: '409 lifecycle conflicts: the instance status now.' }),
  message: z.string().optional().meta({
    description:
      '409 lifecycle conflicts, 502 when the service’s own upstream request budget kept the call back (nothing was sent), 503 Service unavailable and 504 Outcome unknown: a readable explanation.',
  }),
  running_action: z.string().optional().meta({ description: '409 lifecycle conflicts: the action (or job type) in progress, if any.' }),
});

export const rateLimitErrorSchema = z.object({
  error: z.literal('Rate limit exceeded'),
  retry_after: z.number().int().meta({ description: 'Seconds to wait, as in the Retry-After header.' }),
  request_id: z.string(),
});

/** The 503 answer's explanation when a dependency of the service is briefly unavailable. */
export const SERVICE_UNAVAILABLE_MESSAGE =
  'A dependency of the service is briefly unavailable, and the request may or may not have taken effect: retry it after Retry-After (a create or an action with the same Idempotency-Key)';
