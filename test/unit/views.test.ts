import {
  toApiKeyInfo,
  toDeliveryAttemptView,
  toInstanceDetail,
  toInstanceSummary,
  toJobView,
  toWebhookView,
} from '../../shared/domain/views';
import { apiKeySchema } from '../../shared/store/api-keys';
import { instanceSchema } from '../../shared/model/instance';
import { jobSchema } from '../../shared/model/job';
import { deliveryAttemptItemSchema } from '../../shared/store/webhook-deliveries';
import { webhookItemSchema, webhookSummarySchema } from '../../shared/store/webhooks';
import { instanceDetailSchema, instanceSummarySchema } from '../../shared/schemas/instances';
import { jobViewSchema } from '../../shared/schemas/jobs';
import { apiKeyInfoSchema } from '../../shared/schemas/keys';
import { deliveryAttemptSchema, webhookSchema } from '../../shared/schemas/webhooks';
import {
  activeInstanceDetail,
  activeInstanceSecrets,
  activeInstanceSummary,
  disabledWebhookView,
  earlyFailedInstanceDetail,
  earlyFailedInstanceItem,
  failedDeliveryAttemptView,
  failedJobView,
  failingWebhookView,
  revokedApiKeyInfo,
  runningJobView,
  storedActiveInstance,
  storedDisabledWebhook,
  storedEarlyFailedInstance,
  storedFailedDeliveryAttempt,
  storedFailedJob,
  storedJobWithReason,
  jobWithReasonView,
  storedFailingWebhook,
  storedRevokedApiKey,
  storedRunningJob,
} from '../fixtures/stored-items';

/** The response body's bytes: the same fields with the same values in the same order. */
const bytes = (value: unknown) => JSON.stringify(value);

describe('instance views', () => {
  it('shows an active instance in detail: the wire fields in the wire order, secrets opened, nothing the service keeps', () => {
    const view = toInstanceDetail(instanceSchema.parse(storedActiveInstance), activeInstanceSecrets);

    expect(bytes(view)).toBe(bytes(activeInstanceDetail));
    expect(Object.keys(view)).toEqual([
      'instance_id',
      'vps_id',
      'status',
      'ipv4',
      'domain',
      'custom_domain',
      'root_user',
      'root_password',
      'ssh_port',
      'project_name',
      'plan',
      'created_at',
      'labels',
      'ssh_key',
      'activated_at',
    ]);
    expect(instanceDetailSchema.parse(view)).toStrictEqual(activeInstanceDetail);
  });

  it('leaves out every service-only attribute of the stored item', () => {
    const body = bytes(toInstanceDetail(instanceSchema.parse(storedActiveInstance), activeInstanceSecrets));

    for (const attribute of [
      'sealed_secrets',
      'account_id',
      'upstream_id',
      'capacity_held',
      'pending_plan',
      'active_job_id',
      'quarantined_from',
      'deleted_at',
      'paused_by',
      'metered_until',
      'create_requested_at',
      'seen_at',
      'billing_ends_at',
      'billing_segments',
      'updated_at',
      'version',
      'live_account_id',
      'meter_shard',
      'sweep_shard',
      'sweep_seen_at',
    ]) {
      expect(body).not.toContain(`"${attribute}"`);
    }
    expect(body).not.toContain('v1.sealed.');
    expect(body).not.toContain('acct_4f8Kq2ZrT9wXy3LmN7pB');
  });

  it('shows the summary form without the key and the activation time', () => {
    const view = toInstanceSummary(instanceSchema.parse(storedActiveInstance), activeInstanceSecrets);

    expect(bytes(view)).toBe(bytes(activeInstanceSummary));
    expect(instanceSummarySchema.parse(view)).toStrictEqual(activeInstanceSummary);
  });

  it('shows null for the password and the private key once the secrets are gone', () => {
    const item = instanceSchema.parse(storedActiveInstance);

    expect(toInstanceDetail(item, null)).toMatchObject({ root_password: null, ssh_key: { private_key: null } });
    expect(toInstanceSummary(item, null).root_password).toBeNull();
  });

  it('shows no private key for a key the customer brought, whatever the secrets hold', () => {
    const view = toInstanceDetail(instanceSchema.parse(storedEarlyFailedInstance), { root_password: 'p', private_key: null });

    expect(view.ssh_key).toStrictEqual({
      name: 'legacy-key',
      fingerprint: null,
      public_key: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCfake legacy@laptop',
      private_key: null,
    });
  });
});

describe('stored instance items', () => {
  it('reads an item written before later attributes existed, filling them with their defaults', () => {
    expect(instanceSchema.parse(storedEarlyFailedInstance)).toStrictEqual(earlyFailedInstanceItem);
  });

  it('maps such an item to the same wire object as ever', () => {
    const view = toInstanceDetail(instanceSchema.parse(storedEarlyFailedInstance), null);

    expect(bytes(view)).toBe(bytes(earlyFailedInstanceDetail));
  });

  it('keeps every stored attribute it names, and only those', () => {
    const { live_account_id: _a, sweep_shard: _s, sweep_seen_at: _t, ...named } = storedActiveInstance;

    // Stored before the capacity pools were sharded: no shard recorded for its units, read as null.
    expect(instanceSchema.parse(storedActiveInstance)).toStrictEqual({
      ...named,
      ipv4_shard: null,
      tier_shard: null,
      pending_tier_shard: null,
      labels: {},
      sealed_user_data: null,
      failure: null,
    });
  });

  it('refuses an item holding a private key in clear', () => {
    const leaky = { ...storedActiveInstance, ssh_key: { ...storedActiveInstance.ssh_key, private_key: 'PRIVATE' } };

    expect(instanceSchema.safeParse(leaky).success).toBe(false);
  });

  it('refuses an item with a status the service does not know', () => {
    expect(instanceSchema.safeParse({ ...storedActiveInstance, status: 'sleeping' }).success).toBe(false);
  });
});

describe('job views', () => {
  it('shows a running job without its owner or index key', () => {
    const view = toJobView(jobSchema.parse(storedRunningJob));

    expect(bytes(view)).toBe(bytes(runningJobView));
    expect(jobViewSchema.parse(view)).toStrictEqual(runningJobView);
  });

  it('shows a failed job with its end and error', () => {
    expect(bytes(toJobView(jobSchema.parse(storedFailedJob)))).toBe(bytes(failedJobView));
  });

  it('shows a failed job with the reason it kept', () => {
    expect(bytes(toJobView(jobSchema.parse(storedJobWithReason)))).toBe(bytes(jobWithReasonView));
  });
});

describe('API key views', () => {
  it('shows a key without its hash, owner or revocation time', () => {
    const view = toApiKeyInfo(apiKeySchema.parse(storedRevokedApiKey));

    expect(bytes(view)).toBe(bytes(revokedApiKeyInfo));
    expect(apiKeyInfoSchema.parse(view)).toStrictEqual(revokedApiKeyInfo);
    expect(bytes(view)).not.toContain(storedRevokedApiKey.key_hash);
  });
});

describe('webhook views', () => {
  it('shows an endpoint failing for a while as enabled, without its sealed secret, owner or failure run', () => {
    const view = toWebhookView(webhookItemSchema.parse(storedFailingWebhook));

    expect(bytes(view)).toBe(bytes(failingWebhookView));
    expect(webhookSchema.parse(view)).toStrictEqual(failingWebhookView);
    expect(bytes(view)).not.toContain('v1.sealed.');
  });

  it('shows a disabled endpoint, read from the account index, as disabled since then', () => {
    const { secret_sealed: _secret, ...indexed } = storedDisabledWebhook;

    expect(bytes(toWebhookView(webhookSummarySchema.parse(indexed)))).toBe(bytes(disabledWebhookView));
  });

  it('shows a delivery attempt without the table keys and expiry', () => {
    const view = toDeliveryAttemptView(deliveryAttemptItemSchema.parse(storedFailedDeliveryAttempt));

    expect(bytes(view)).toBe(bytes(failedDeliveryAttemptView));
    expect(deliveryAttemptSchema.parse(view)).toStrictEqual(failedDeliveryAttemptView);
  });
});
