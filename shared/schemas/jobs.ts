import * as z from 'zod';
import { timestampSchema } from './timestamps';

/** `reconcile`: a repair the service made on its own (the server vanished or is not ours); it is recorded ended. */
export const jobTypes = ['provision', 'delete', 'power_on', 'power_off', 'reboot', 'resize', 'reconcile'] as const;

export const jobViewSchema = z.strictObject({
  job_id: z.string(),
  type: z.enum(jobTypes),
  instance_id: z.number().int(),
  status: z.enum(['running', 'succeeded', 'failed']),
  started_at: timestampSchema,
  finished_at: timestampSchema.nullable(),
  error: z.string().nullable(),
});
export type JobView = z.infer<typeof jobViewSchema>;
