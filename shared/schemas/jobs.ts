import * as z from '../model/zod';
import { jobStatusSchema, jobTypes, jobTypeSchema } from '../model/job-states';
import { timestampSchema } from './timestamps';
import { failureView } from './failure';

export { jobTypes };

export const jobViewSchema = z.strictObject({
  job_id: z.string(),
  type: jobTypeSchema,
  instance_id: z.number().int(),
  status: jobStatusSchema,
  started_at: timestampSchema,
  finished_at: timestampSchema.nullable(),
  error: z.string().nullable(),
  failure: failureView,
});
export type JobView = z.infer<typeof jobViewSchema>;
