import * as z from './zod';

/**
 * What a job does; stored on the job, shown by the API, carried by events. `reconcile`: a repair the service made on
 * its own (the server vanished or is not ours); it is recorded ended.
 */
export const jobTypes = ['provision', 'delete', 'power_on', 'power_off', 'reboot', 'resize', 'reconcile'] as const;
export const jobTypeSchema = z.enum(jobTypes);

/** Where a job stands: running until it ends, once, one way or the other. */
const jobStatuses = ['running', 'succeeded', 'failed'] as const;
export const jobStatusSchema = z.enum(jobStatuses);
