import * as z from 'zod';

export const errorBodySchema = z.object({
  error: z.string().meta({ description: 'What went wrong; the texts of the interface specification where it gives one.' }),
  request_id: z.string(),
  status: z.string().optional().meta({ description: '409 lifecycle conflicts: the instance status now.' }),
  message: z.string().optional().meta({ description: '409 lifecycle conflicts and 504 Outcome unknown: a readable explanation.' }),
  running_action: z.string().optional().meta({ description: '409 lifecycle conflicts: the action (or job type) in progress, if any.' }),
});

export const rateLimitErrorSchema = z.object({
  error: z.literal('Rate limit exceeded'),
  retry_after: z.number().int().meta({ description: 'Seconds to wait, as in the Retry-After header.' }),
  request_id: z.string(),
});
