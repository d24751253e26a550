import { describe, expect, it } from 'vitest';
import { indexKeys } from '../../shared/model/indexes';
import { instanceSchema, newInstance, withSecretsLifetime, type InstanceChanges } from '../../shared/model/instance';
import { storedActiveInstance } from '../fixtures/stored-items';

const active = instanceSchema.parse(storedActiveInstance);
const NOW = '2026-03-01T12:00:00.000Z';

describe('withSecretsLifetime', () => {
  it.each<[string, InstanceChanges, string | null | undefined]>([
    ['failing', { status: 'failed' }, null],
    ['deleting', { status: 'deleting' }, null],
    ['destroyed', { status: 'destroyed' }, null],
    ['a deletion', { deleted_at: NOW }, null],
    ['powering off', { status: 'stopped' }, undefined],
    ['a change of plan', { plan: active.plan }, undefined],
    ['a loss that keeps them by name', { status: 'failed', sealed_secrets: 'v1.sealed.kept' }, 'v1.sealed.kept'],
  ])('on %s, leaves sealed_secrets as %j', (_, changes, secrets) => {
    expect(withSecretsLifetime(changes).sealed_secrets).toBe(secrets);
  });

  it('changes nothing else', () => {
    expect(withSecretsLifetime({ status: 'failed', ipv4: null })).toEqual({
      status: 'failed',
      ipv4: null,
      sealed_secrets: null,
      sealed_user_data: null,
    });
  });
});

describe('indexKeys', () => {
  it('puts a running instance with a server in the sweep index (first seen now) and out of the in-flight one', () => {
    expect(indexKeys(active, { paused_by: null }, NOW)).toEqual({
      set: { sweep_shard: 'sweep#9' },
      setIfAbsent: { sweep_seen_at: NOW },
      remove: ['inflight_shard'],
    });
  });

  it('puts no instance in the old meter index: a change of billing segments settles on the account', () => {
    const segments = [{ start: NOW, end: null, hourly_micros: 17_860, quarters: 4 as const }];

    expect(indexKeys(active, { billing_segments: segments }, NOW).set).toEqual({ sweep_shard: 'sweep#9' });
  });

  it('keeps an instance with an action under way in the in-flight index', () => {
    expect(indexKeys(active, { active_job_id: 'job-1' }, NOW)).toMatchObject({
      set: { inflight_shard: 'inflight#1', sweep_shard: 'sweep#9' },
      remove: [],
    });
  });

  it('takes a deleted instance out of the account list and the sweep, and into the in-flight index', () => {
    expect(indexKeys(active, { status: 'deleting', deleted_at: NOW }, NOW)).toEqual({
      set: { inflight_shard: 'inflight#1' },
      setIfAbsent: {},
      remove: ['sweep_shard', 'sweep_seen_at', 'live_account_id'],
    });
  });
});

describe('newInstance', () => {
  const created = {
    instanceId: 42,
    accountId: 'acct_new',
    projectName: 'web',
    plan: { flavor: 's-1vcpu-2gb', vcpu: 1, ram_mb: 2048, disk_gb: 30, hourly_price: 0.01786 },
    sshKey: { name: 'web-key', fingerprint: 'SHA256:abc', public_key: 'ssh-ed25519 AAAA root@vps-42', private_key: null },
    sealedSecrets: 'v1.sealed.x',
    domain: 'vps-42.vps.example.test',
    sshPort: 2222,
    jobId: 'job-42',
    now: NOW,
  };

  it('is pending, holds its capacity, bills nothing yet, and runs a provision job', () => {
    const { instance, job } = newInstance(created);

    expect(instanceSchema.parse(instance)).toEqual(instance);
    expect(instance).toMatchObject({
      status: 'pending',
      ssh_port: 2222,
      capacity_held: true,
      metered_until: null,
      billing_segments: [],
      failure: null,
      version: 1,
    });
    expect(instance).not.toHaveProperty('idempotency_key');
    expect(job).toEqual({
      job_id: 'job-42',
      type: 'provision',
      instance_id: 42,
      account_id: 'acct_new',
      status: 'running',
      started_at: NOW,
      finished_at: null,
      error: null,
      failure: null,
    });
  });

  it('records the Idempotency-Key of a keyed create', () => {
    expect(newInstance({ ...created, idempotencyKey: 'acct_new#key-1' }).instance.idempotency_key).toBe('acct_new#key-1');
  });
});
