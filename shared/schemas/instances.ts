import * as z from 'zod';
import { displayName } from './validation';
import { catalog, flavorIds, flavorRefusal } from '../model/flavors';
import { timestampSchema } from './timestamps';
import { instanceStatusSchema, type InstanceStatus } from '../model/instance-status';
import { actionTypes } from '../model/actions';

export { instanceStatusSchema, type InstanceStatus };

export const planSchema = z.strictObject({
  flavor: z.string(),
  vcpu: z.number().int().nullable(),
  ram_mb: z.number().int().nullable(),
  disk_gb: z.number().int().nullable(),
  hourly_price: z.number().nullable(),
});

export const sshKeySchema = z.strictObject({
  name: z.string(),
  fingerprint: z.string().nullable(),
  public_key: z.string(),
  private_key: z.string().nullable(),
});

export const instanceSummarySchema = z.strictObject({
  instance_id: z.number().int(),
  vps_id: z.string(),
  status: instanceStatusSchema,
  ipv4: z.string().nullable(),
  domain: z.string().nullable(),
  custom_domain: z.string().nullable(),
  root_user: z.string(),
  root_password: z.string().nullable(),
  ssh_port: z.number().int(),
  project_name: z.string(),
  plan: planSchema,
  created_at: timestampSchema.nullable(),
});

export const instanceDetailSchema = instanceSummarySchema.extend({
  ssh_key: sshKeySchema,
  activated_at: timestampSchema.nullable(),
});

export type InstanceSummary = z.infer<typeof instanceSummarySchema>;
export type InstanceDetail = z.infer<typeof instanceDetailSchema>;

const PROJECT_NAME_MAX = 64;

/** An orderable flavor; anything else is refused with the spec's own text for it. */
const flavorSchema = z
  .enum(flavorIds, { error: (issue) => (issue.input === undefined ? undefined : flavorRefusal(String(issue.input))) })
  .meta({
    id: 'Flavor',
    description: 'An orderable flavor. `x-plans` gives the vCPUs, memory, disk and hourly price (USD) of each.',
    'x-plans': Object.fromEntries(
      [...catalog].map(([flavor, { vcpu, ram_mb, disk_gb, hourly_price }]) => [flavor, { vcpu, ram_mb, disk_gb, hourly_price }]),
    ),
  });

export const createInstanceBodySchema = z.strictObject({
  project_name: displayName(PROJECT_NAME_MAX),
  flavor: flavorSchema,
  ssh_public_key: z.string().optional(),
});
export type CreateInstanceBody = z.infer<typeof createInstanceBodySchema>;

const instanceIdSchema = z
  .string()
  .regex(/^[1-9][0-9]{0,14}$/)
  .transform(Number);

/** The path's instance id; anything that is not a positive integer cannot name an instance, so it is a 404. */
export function instanceIdFrom(pathParameters: Record<string, string | undefined>): number | undefined {
  const parsed = instanceIdSchema.safeParse(pathParameters.instance_id);
  return parsed.success ? parsed.data : undefined;
}

export const actionBodySchema = z
  .strictObject({
    type: z.enum(actionTypes, { error: 'Invalid action type' }),
    flavor: flavorSchema.optional(),
  })
  .superRefine((body, context) => {
    if (body.type === 'resize' && body.flavor === undefined) {
      context.addIssue({ code: 'custom', path: ['flavor'], message: 'flavor is required for resize' });
    }
    if (body.type !== 'resize' && body.flavor !== undefined) {
      context.addIssue({ code: 'custom', path: ['flavor'], message: 'flavor applies only to resize' });
    }
  });
export type ActionBody = z.infer<typeof actionBodySchema>;

export const actionResultSchema = z.strictObject({
  ok: z.boolean(),
  action: z.enum(actionTypes),
  job_id: z.string().nullable(),
});
export type ActionResult = z.infer<typeof actionResultSchema>;

export const deleteResultSchema = z.strictObject({
  instance_id: z.number().int(),
  status: z.literal('deleting'),
  job_id: z.string().nullable(),
});
export type DeleteResult = z.infer<typeof deleteResultSchema>;

/** The most a list page may hold; without paging parameters a list returns every live instance. */
export const LIST_PAGE_MAX = 200;

const PER_PAGE_RULE = `per_page must be a whole number from 1 to ${LIST_PAGE_MAX}`;

/** Optional paging of the instance list. */
export const listInstancesQuerySchema = z.object({
  per_page: z.coerce
    .number({ error: PER_PAGE_RULE })
    .int({ error: PER_PAGE_RULE })
    .min(1, { error: PER_PAGE_RULE })
    .max(LIST_PAGE_MAX, { error: PER_PAGE_RULE })
    .optional()
    .meta({
      description: `Instances per page, 1 to ${LIST_PAGE_MAX}. Without it (and without page_token) the list holds every live instance.`,
    }),
  page_token: z
    .string()
    .max(64, 'Invalid page_token')
    .optional()
    .meta({ description: 'Where the next page starts: copied from the `Link: <…>; rel="next"` header of the previous page.' }),
});
export type ListInstancesQuery = z.infer<typeof listInstancesQuerySchema>;
