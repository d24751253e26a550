import * as z from './zod';
import { isoInstant } from './attributes';
import { jobStatusSchema, jobTypeSchema } from './job-states';
import { failureSchema, type FailureReason } from './failure';

/** A job: one lifecycle run for an instance. What the API shows of it is made by `toJobView` (shared/domain/views.ts). */
export const jobSchema = z.object({
  job_id: z.string(),
  type: jobTypeSchema,
  instance_id: z.number().int(),
  status: jobStatusSchema,
  started_at: isoInstant,
  finished_at: isoInstant.nullable(),
  /** The failure's message; kept beside `failure` as the interface's own field. */
  error: z.string().nullable(),
  /** Why a failed job failed; null otherwise (and on jobs that ended before reasons were kept). */
  failure: failureSchema.nullable().default(null),
  account_id: z.string(),
});
export type Job = z.infer<typeof jobSchema>;

export type JobOutcome = { status: 'succeeded' } | { status: 'failed'; failure: FailureReason };

export const failedWith = (failure: FailureReason): JobOutcome => ({ status: 'failed', failure });

/** The end of a job: which one, how it ended, and when. */
export interface JobFinish {
  readonly job_id: string;
  readonly outcome: JobOutcome;
  readonly at: string;
}
