import * as z from './zod';

/** Every state an instance can be in: stored on the instance, shown by the API, carried by events. */
export const instanceStatuses = [
  'pending',
  'provisioning',
  'active',
  'stopped',
  'failed',
  'resizing',
  'deleting',
  'destroyed',
  'quarantined',
] as const;
export const instanceStatusSchema = z.enum(instanceStatuses);
export type InstanceStatus = z.infer<typeof instanceStatusSchema>;
