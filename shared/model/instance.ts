import * as z from './zod';
import { isoInstant } from './attributes';
import { billingSegmentSchema } from './billing-segments';
import { instanceStatusSchema, type InstanceStatus } from './instance-status';
import type { Job } from './job';
import { failureSchema } from './failure';

/** A plan as stored on an instance (its own and a resize's target): the flavor and what it gave when chosen. */
const storedPlanSchema = z.strictObject({
  flavor: z.string(),
  vcpu: z.number().int().nullable(),
  ram_mb: z.number().int().nullable(),
  disk_gb: z.number().int().nullable(),
  /** USD per hour, as published when the plan was chosen. */
  hourly_price: z.number().nullable(),
});
export type StoredPlan = z.infer<typeof storedPlanSchema>;

/** The instance's SSH key as stored: the public half only; a generated private key lives sealed in `sealed_secrets`. */
const storedSshKeySchema = z.strictObject({
  name: z.string(),
  fingerprint: z.string().nullable(),
  public_key: z.string(),
  private_key: z.null(),
});

/**
 * An instance: what the service knows of one customer's server. The store keeps it as one item (with sparse index
 * keys beside it, see ./indexes.ts); the root password and a generated private key are never kept in clear: they
 * live sealed in `sealed_secrets`. What the API shows of it is made by the mappers in shared/domain/views.ts.
 */
export const instanceSchema = z.object({
  instance_id: z.number().int(),
  /** The upstream server's id as text; empty until the server exists. */
  vps_id: z.string(),
  status: instanceStatusSchema,
  ipv4: z.string().nullable(),
  domain: z.string().nullable(),
  custom_domain: z.string().nullable(),
  root_user: z.string(),
  ssh_port: z.number().int(),
  project_name: z.string(),
  plan: storedPlanSchema,
  created_at: isoInstant.nullable(),
  ssh_key: storedSshKeySchema,
  activated_at: isoInstant.nullable(),
  /** The root password and generated private key, encrypted (see shared/domain/instance-secrets.ts); null once gone. */
  sealed_secrets: z.string().nullable(),
  account_id: z.string(),
  /** The upstream server's numeric id, once created. */
  upstream_id: z.number().int().nullable(),
  /** True while the instance holds an IPv4 address and a unit of its plan's tier. */
  capacity_held: z.boolean(),
  /** The target of a resize in progress; its tier unit is held from acceptance until the resize ends. */
  pending_plan: storedPlanSchema.nullable().default(null),
  /**
   * The counter shard each held unit was taken from (see `heldUnits`): the IPv4 address's, the plan's tier unit's and
   * the pending plan's. Null while no such unit is held, and for a unit of a pool's old single item (items written
   * before the pools were sharded).
   */
  ipv4_shard: z.number().int().nullable().default(null),
  tier_shard: z.number().int().nullable().default(null),
  pending_tier_shard: z.number().int().nullable().default(null),
  /** The job of the lifecycle action in progress; at most one runs at a time. */
  active_job_id: z.string().nullable().default(null),
  /** The customer's labels (see ./labels.ts). */
  labels: z.record(z.string(), z.string()).default({}),
  /** The customer's cloud-init user data, sealed like the credentials (it often holds tokens); null once not needed. */
  sealed_user_data: z.string().nullable().default(null),
  /** Why the instance failed, while it is failed. */
  failure: failureSchema.nullable().default(null),
  /** The status to return to when an operator releases a quarantined instance. */
  quarantined_from: instanceStatusSchema.nullable().default(null),
  deleted_at: z.string().nullable(),
  paused_by: z.enum(['user', 'billing']).nullable(),
  metered_until: z.string().nullable(),
  /** When a create was last sent upstream: a retry whose tag lookup finds nothing waits before creating again. */
  create_requested_at: z.string().nullable().default(null),
  /** When the drift sweep last saw the server upstream; billing of an instance whose server vanished ends here. */
  seen_at: z.string().nullable().default(null),
  /**
   * Evidence that the server may be gone, kept until it is seen again: the first and the last read by id that did not
   * find it, and how many such reads there were. Absent while there is none (never written as null: the reads are
   * added up in place). The version does not move with it (it changes no state).
   */
  absent_since: z.string().optional(),
  absent_last_at: z.string().optional(),
  absent_reads: z.number().int().optional(),
  /** Set when the instance lost its server: nothing after this is charged. */
  billing_ends_at: z.string().nullable().default(null),
  /** The open billing segment (see shared/model/billing-segments.ts); an instance metered the old way kept more. */
  billing_segments: z.array(billingSegmentSchema).default([]),
  /** Set while the instance is metered the old way (its key in the old meter's index), until it moves to its account's checkpoint. */
  meter_shard: z.string().optional(),
  updated_at: z.string().optional(),
  /** The Idempotency-Key (scoped to the account) of the create that made it, when it had one. */
  idempotency_key: z.string().optional(),
  version: z.number().int(),
});
export type Instance = z.infer<typeof instanceSchema>;

export type InstanceChanges = Partial<Omit<Instance, 'instance_id' | 'account_id' | 'version' | 'updated_at'>>;

/** Once an instance has failed or is being deleted, nobody may log in with its credentials again: they go. */
const SECRETS_END_STATUSES: readonly InstanceStatus[] = ['failed', 'deleting', 'destroyed'];

/**
 * The changes with the customer's secrets' lifetime applied: a change to an end status or a deletion erases them,
 * unless it names the secrets itself (a server taken for lost keeps them, for it may be found again); and a failure's
 * reason goes when the status leaves `failed`.
 */
export function withSecretsLifetime(changes: InstanceChanges): InstanceChanges {
  const ending =
    !('sealed_secrets' in changes) &&
    ((changes.status !== undefined && SECRETS_END_STATUSES.includes(changes.status)) || Boolean(changes.deleted_at));
  // A failure explains a failed instance only: one that leaves it (a lost server found again) leaves its reason behind.
  const recovering = changes.status !== undefined && changes.status !== 'failed' && !('failure' in changes);
  return {
    ...changes,
    ...(ending ? { sealed_secrets: null, sealed_user_data: null } : {}),
    ...(recovering ? { failure: null } : {}),
  };
}

export interface NewInstance {
  readonly instanceId: number;
  readonly accountId: string;
  readonly projectName: string;
  readonly plan: StoredPlan;
  /** The public half only: a generated private key goes into the sealed secrets. */
  readonly sshKey: Instance['ssh_key'];
  readonly sealedSecrets: string;
  /** The customer's user data, sealed; absent when none was given. */
  readonly sealedUserData?: string | undefined;
  readonly labels?: Readonly<Record<string, string>> | undefined;
  readonly domain: string;
  /** The port the server will answer SSH on. */
  readonly sshPort: number;
  readonly jobId: string;
  readonly now: string;
  /** The create's Idempotency-Key (scoped to the account), recorded with it. */
  readonly idempotencyKey?: string | undefined;
}

/**
 * A new instance, pending, holding an IPv4 address and a unit of its plan's tier (the shards are picked when the
 * create's transaction takes them), and its running provision job.
 */
export function newInstance(created: NewInstance): { instance: Instance; job: Job } {
  const instance: Instance = {
    instance_id: created.instanceId,
    account_id: created.accountId,
    vps_id: '',
    upstream_id: null,
    status: 'pending',
    ipv4: null,
    domain: created.domain,
    custom_domain: null,
    root_user: 'root',
    ssh_port: created.sshPort,
    ssh_key: created.sshKey,
    sealed_secrets: created.sealedSecrets,
    project_name: created.projectName,
    plan: created.plan,
    activated_at: null,
    created_at: created.now,
    capacity_held: true,
    pending_plan: null,
    ipv4_shard: null,
    tier_shard: null,
    pending_tier_shard: null,
    active_job_id: null,
    labels: { ...created.labels },
    sealed_user_data: created.sealedUserData ?? null,
    failure: null,
    quarantined_from: null,
    deleted_at: null,
    paused_by: null,
    metered_until: null,
    create_requested_at: null,
    seen_at: null,
    billing_ends_at: null,
    billing_segments: [],
    version: 1,
    ...(created.idempotencyKey === undefined ? {} : { idempotency_key: created.idempotencyKey }),
  };
  const job: Job = {
    job_id: created.jobId,
    type: 'provision',
    instance_id: created.instanceId,
    account_id: created.accountId,
    status: 'running',
    started_at: created.now,
    finished_at: null,
    error: null,
    failure: null,
  };
  return { instance, job };
}
