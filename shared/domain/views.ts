/**
 * What the API shows of stored items: one explicit mapper per view, from the store's item to the wire's object,
 * field by field and in the wire's order. Stored items may carry anything the service needs (sealed secrets,
 * upstream ids, billing segments, owners); only what a mapper names reaches a response.
 */
import type { InstanceDetail, InstanceSummary } from '../schemas/instances';
import type { JobView } from '../schemas/jobs';
import type { ApiKeyInfo } from '../schemas/keys';
import type { DeliveryAttempt, WebhookView } from '../schemas/webhooks';
import type { ApiKey } from '../store/api-keys';
import type { Instance, StoredPlan } from '../model/instance';
import type { Job } from '../model/job';
import type { FailureReason } from '../model/failure';
import type { DeliveryAttemptItem } from '../store/webhook-deliveries';
import type { WebhookSummary } from '../store/webhooks';
import type { InstanceSecrets } from './instance-secrets';

function toPlanView(plan: StoredPlan): InstanceSummary['plan'] {
  return {
    flavor: plan.flavor,
    vcpu: plan.vcpu,
    ram_mb: plan.ram_mb,
    disk_gb: plan.disk_gb,
    hourly_price: plan.hourly_price,
  };
}

/** The summary form; `secrets` are null once removed (a failed instance), and the password then shows as null. */
export function toInstanceSummary(item: Instance, secrets: InstanceSecrets | null): InstanceSummary {
  return {
    instance_id: item.instance_id,
    vps_id: item.vps_id,
    status: item.status,
    ipv4: item.ipv4,
    domain: item.domain,
    custom_domain: item.custom_domain,
    root_user: item.root_user,
    root_password: secrets?.root_password ?? null,
    ssh_port: item.ssh_port,
    project_name: item.project_name,
    plan: toPlanView(item.plan),
    created_at: item.created_at,
    labels: { ...item.labels },
  };
}

/** The detail form: the summary, the SSH key (its private half only when generated and not yet removed) and activation. */
export function toInstanceDetail(item: Instance, secrets: InstanceSecrets | null): InstanceDetail {
  return {
    ...toInstanceSummary(item, secrets),
    ssh_key: {
      name: item.ssh_key.name,
      fingerprint: item.ssh_key.fingerprint,
      public_key: item.ssh_key.public_key,
      private_key: secrets?.private_key ?? null,
    },
    activated_at: item.activated_at,
    ...failureOf(item),
  };
}

/** The `failure` field: only on what has failed and kept its reason. */
function failureOf(item: { readonly status: string; readonly failure: FailureReason | null }): { failure?: FailureReason } {
  return item.status === 'failed' && item.failure !== null ? { failure: item.failure } : {};
}

export function toJobView(job: Job): JobView {
  return {
    job_id: job.job_id,
    type: job.type,
    instance_id: job.instance_id,
    status: job.status,
    started_at: job.started_at,
    finished_at: job.finished_at,
    error: job.error,
    ...failureOf(job),
  };
}

export function toApiKeyInfo(key: ApiKey): ApiKeyInfo {
  return {
    id: key.id,
    name: key.name,
    key_prefix: key.key_prefix,
    is_active: key.is_active,
    created_at: key.created_at,
    last_used_at: key.last_used_at,
  };
}

/** An endpoint is enabled until it is disabled; why it was (`disabled_reason`) goes out in its webhook.disabled event. */
export function toWebhookView(item: WebhookSummary): WebhookView {
  return {
    id: item.webhook_id,
    url: item.url,
    events: [...item.events],
    enabled: item.disabled_at === null,
    disabled_at: item.disabled_at,
    created_at: item.created_at,
  };
}

export function toDeliveryAttemptView(item: DeliveryAttemptItem): DeliveryAttempt {
  return {
    id: item.id,
    event_id: item.event_id,
    event_type: item.event_type,
    attempt: item.attempt,
    status: item.status,
    response_code: item.response_code,
    error: item.error,
    time: item.time,
  };
}
