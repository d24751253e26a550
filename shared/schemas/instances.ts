import * as z from '../model/zod';
import { displayName } from './validation';
import { catalog, flavorIds, flavorRefusal } from '../model/flavors';
import { timestampSchema } from './timestamps';
import { failureView } from './failure';
import { instanceStatusSchema, type InstanceStatus } from '../model/instance-status';
import { actionTypes } from '../model/actions';
import {
  isLabelKey,
  isLabelValue,
  LABEL_KEY_RULE,
  LABEL_LIMITS,
  LABEL_VALUE_RULE,
  labelSetRefusal,
  parseLabelSelector,
} from '../model/labels';

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
  labels: z.record(z.string(), z.string()).meta({ description: 'The labels set at create or by PATCH (`{}` when none).' }),
});

export const instanceDetailSchema = instanceSummarySchema.extend({
  ssh_key: sshKeySchema,
  activated_at: timestampSchema.nullable(),
  failure: failureView,
});

export type InstanceSummary = z.infer<typeof instanceSummarySchema>;
export type InstanceDetail = z.infer<typeof instanceDetailSchema>;

const PROJECT_NAME_MAX = 64;

/** An orderable flavor; anything else is refused with the spec's own text for it. */
const flavorSchema = z
  .enum(flavorIds, { error: (issue) => (issue.input === undefined ? undefined : flavorRefusal(String(issue.input))) })
  .meta({
    id: 'Flavor',
    description:
      'An orderable flavor. `x-plans` gives the vCPUs, memory, disk and hourly price (USD) of each. `s-1vcpu-1gb` is refused with 400 `Flavor s-1vcpu-1gb is permanently unavailable`; any other value with 400 `Invalid flavor: <flavor>`.',
    'x-plans': Object.fromEntries(
      [...catalog].map(([flavor, { vcpu, ram_mb, disk_gb, hourly_price }]) => [flavor, { vcpu, ram_mb, disk_gb, hourly_price }]),
    ),
  });

/** What cloud-init accepts as user data, here and at DigitalOcean: at most 64 KiB of UTF-8. */
const USER_DATA_MAX_BYTES = 64 * 1024;

const userDataSchema = z
  .string()
  .refine((text) => Buffer.byteLength(text) <= USER_DATA_MAX_BYTES, {
    error: `user_data must be at most ${USER_DATA_MAX_BYTES} bytes (64 KiB) of UTF-8`,
  })
  .meta({
    description:
      'cloud-init user data (a `#cloud-config` document or a script) run at first boot, at most 64 KiB of UTF-8. Stored sealed, passed to the server, and never returned by any read or event.',
  });

const labelsSchema = z
  .record(z.string(), z.string())
  .superRefine((labels, context) => checkLabels(labels, context))
  .meta({
    description: `\`key: value\` pairs (${LABEL_LIMITS}), with Kubernetes' syntax: ${LABEL_KEY_RULE}; ${LABEL_VALUE_RULE}.`,
  });

function checkLabels(labels: Record<string, string | null>, context: z.RefinementCtx): void {
  const refusal = labelSetRefusal(labels);
  if (refusal) context.addIssue({ code: 'custom', message: refusal });
  for (const [key, value] of Object.entries(labels)) {
    if (!isLabelKey(key)) context.addIssue({ code: 'custom', message: `labels: invalid key ${JSON.stringify(key)}: ${LABEL_KEY_RULE}` });
    else if (value !== null && !isLabelValue(value)) {
      context.addIssue({ code: 'custom', message: `labels: invalid value for ${JSON.stringify(key)}: ${LABEL_VALUE_RULE}` });
    }
  }
}

export const createInstanceBodySchema = z.strictObject({
  project_name: displayName(PROJECT_NAME_MAX),
  flavor: flavorSchema,
  ssh_public_key: z.string().optional(),
  user_data: userDataSchema.optional(),
  labels: labelsSchema.optional(),
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
  // What the refinement below enforces, said in the document: a resize names its flavor.
  .meta({ if: { properties: { type: { const: 'resize' } } }, then: { required: ['flavor'] } })
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

/** PATCH: a new name and/or labels, merged into the existing ones (RFC 7396: null removes a label). */
export const updateInstanceBodySchema = z
  .strictObject({
    project_name: displayName(PROJECT_NAME_MAX).optional(),
    labels: z
      .record(z.string(), z.string().nullable())
      .superRefine((labels, context) => checkLabels(labels, context))
      .optional()
      .meta({ description: 'Labels to set (a string) or remove (null); those not named stay as they are.' }),
  })
  .refine((body) => body.project_name !== undefined || body.labels !== undefined, {
    error: 'Give project_name or labels to change',
  });
export type UpdateInstanceBody = z.infer<typeof updateInstanceBodySchema>;

/** The most a list page may hold; without paging parameters a list returns every live instance. */
export const LIST_PAGE_MAX = 200;

const PER_PAGE_RULE = `per_page must be a whole number from 1 to ${LIST_PAGE_MAX}`;

const STATUS_RULE = `status must be one or more of ${instanceStatusSchema.options.join(', ')}, separated by commas`;
const SELECTOR_RULE = 'label_selector must be comma-separated requirements: key=value, key!=value, key (has the label) or !key (has not)';

/** The statuses of a `status` filter (`active,stopped`), or undefined when one is not a status. */
export function statusesIn(text: string): InstanceStatus[] | undefined {
  const parsed = z
    .array(instanceStatusSchema)
    .min(1)
    .safeParse(text.split(',').map((status) => status.trim()));
  return parsed.success ? [...new Set(parsed.data)] : undefined;
}

/** Optional paging and filters of the instance list; any other parameter is refused, naming it. */
export const listInstancesQuerySchema = z.strictObject(
  {
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
    status: z
      .string()
      .refine((text) => statusesIn(text) !== undefined, { error: STATUS_RULE })
      .optional()
      .meta({ description: 'Only instances in these statuses: one, or several separated by commas (`active,stopped`).' }),
    name: z
      .string()
      .max(PROJECT_NAME_MAX, { error: `name must be at most ${PROJECT_NAME_MAX} characters` })
      .optional()
      .meta({ description: 'Only instances whose `project_name` is exactly this.' }),
    label_selector: z
      .string()
      .max(1024, { error: 'label_selector must be at most 1024 characters' })
      .refine((text) => parseLabelSelector(text) !== undefined, { error: SELECTOR_RULE })
      .optional()
      .meta({
        description:
          'Only instances whose labels meet every requirement: `env=prod`, `tier!=db` (or no `tier` label), `gpu` (has the label), `!legacy` (has not); comma-separated, at most 16.',
      }),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `Unknown query parameter${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.join(', ')}`
        : undefined,
  },
);
export type ListInstancesQuery = z.infer<typeof listInstancesQuerySchema>;
