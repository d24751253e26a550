import { describe, expect, it } from 'vitest';
import { chargedPieces, rateChangeOf, segmentsOf } from '../../shared/model/billing-segments';
import { capacityShares } from '../../shared/model/capacity';
import { driftOf, lostServerChange, readoptionOf } from '../../shared/model/convergence';
import { orderablePlan } from '../../shared/model/flavors';
import { instanceSchema } from '../../shared/model/instance';
import type { UpstreamServer } from '../../shared/model/server';
import { parsePublicKey } from '../../shared/model/ssh-keys';
import { takeToken } from '../../shared/model/upstream-budget';
import { storedActiveInstance } from '../fixtures/stored-items';

const active = instanceSchema.parse(storedActiveInstance);
const smallPlan = active.plan;
const largePlan = { flavor: 's-2vcpu-4gb', vcpu: 2, ram_mb: 4096, disk_gb: 40, hourly_price: 0.03571 };
const server = (changes: Partial<UpstreamServer> = {}): UpstreamServer => ({
  id: 501234567,
  name: 'vps-41',
  status: 'active',
  ipv4: '203.0.113.41',
  sizeSlug: 's-1vcpu-2gb',
  diskGb: 30,
  tags: ['instance-41'],
  ...changes,
});
const plans = (flavor: string) => (flavor === largePlan.flavor ? largePlan : undefined);

describe('plans and shares', () => {
  it('answers the plan of an orderable flavor', () => {
    expect(orderablePlan('s-1vcpu-2gb')).toEqual(smallPlan);
  });

  it('refuses a pool without shards', () => {
    expect(() => capacityShares(10, 0)).toThrow('a pool has at least one shard');
  });

  it('gives a first call on an untouched bucket a token', () => {
    expect(takeToken(undefined, 0, 'live', { capacity: 10, refillPerSecond: 1 })).toEqual({
      granted: true,
      next: { tat: 1_000, holdUntil: 0 },
    });
  });
});

describe('billing segments at their edges', () => {
  const billed = { plan: smallPlan, paused_by: null, deleted_at: null, billing_ends_at: null } as const;

  it('reads an instance billed before segments were kept as one open segment from metered_until, none once billing ended', () => {
    expect(segmentsOf({ ...billed, metered_until: '2026-03-01T10:00:00.000Z', billing_segments: [] })).toEqual([
      { start: '2026-03-01T10:00:00.000Z', end: null, hourly_micros: 17_860, quarters: 4 },
    ]);
    expect(
      segmentsOf({
        ...billed,
        metered_until: '2026-03-01T10:00:00.000Z',
        billing_ends_at: '2026-03-01T10:00:00.000Z',
        billing_segments: [],
      }),
    ).toEqual([]);
  });

  it('closes the open segment no earlier than it opened', () => {
    const open = { start: '2026-03-01T12:00:00.000Z', end: null, hourly_micros: 17_860, quarters: 4 } as const;
    const before = { ...billed, metered_until: '2026-03-01T12:00:00.000Z', billing_segments: [open] };

    const after = rateChangeOf(before, { ...before, paused_by: 'user' }, '2026-03-01T11:00:00.000Z');

    expect(after).toEqual({
      closesAt: '2026-03-01T12:00:00.000Z',
      opens: { start: '2026-03-01T12:00:00.000Z', end: null, hourly_micros: 17_860, quarters: 1 },
    });
  });

  it('bills a server found again from now, not from when its billing ended', () => {
    const lost = {
      ...billed,
      metered_until: '2026-03-01T10:00:00.000Z',
      billing_ends_at: '2026-03-01T10:30:00.000Z',
      billing_segments: [],
    } as const;

    expect(rateChangeOf(lost, { ...lost, billing_ends_at: null }, '2026-03-01T14:00:00.000Z')).toEqual({
      closesAt: null,
      opens: { start: '2026-03-01T14:00:00.000Z', end: null, hourly_micros: 17_860, quarters: 4 },
    });
  });

  it('charges nothing for a segment that ends before the charge starts', () => {
    const closed = { start: '2026-03-01T10:00:00.000Z', end: '2026-03-01T11:00:00.000Z', hourly_micros: 17_860, quarters: 4 } as const;

    expect(chargedPieces([closed], '2026-03-01T11:00:00.000Z', Date.parse('2026-03-01T12:00:00.000Z'))).toEqual([]);
  });
});

describe('convergence at its edges', () => {
  it('keeps the plan when a server found again has a size the service does not sell, and takes its power state', () => {
    const lost = { ...active, status: 'failed' as const, capacity_held: false };

    const change = readoptionOf(lost, server({ status: 'off', sizeSlug: 's-64vcpu', ipv4: null }), plans);

    expect(change.changes).toMatchObject({ status: 'stopped', paused_by: 'user', plan: smallPlan, capacity_held: true });
    expect(change.changes).not.toHaveProperty('ipv4');
    expect(change.reserve).toEqual([{ kind: 'ipv4' }, { kind: 'tier', flavor: 's-1vcpu-2gb' }]);
  });

  it('ends the billing of a lost server that was never seen nor metered at no time at all', () => {
    const lost = lostServerChange({ ...active, seen_at: null, metered_until: null, pending_plan: largePlan });

    expect(lost.changes.billing_ends_at).toBeNull();
    expect(lost.release).toEqual([{ kind: 'ipv4' }, { kind: 'tier', flavor: 's-1vcpu-2gb' }, { kind: 'tier', flavor: 's-2vcpu-4gb' }]);
  });

  it('follows a size changed behind its back without moving capacity it does not hold', () => {
    const drift = driftOf({ ...active, capacity_held: false }, server({ sizeSlug: 's-2vcpu-4gb' }), 'instance-41', plans);

    expect(drift).toEqual({ kinds: ['size'], changes: { plan: largePlan }, reserve: [], release: [] });
  });
});

describe('SSH public keys at their edges', () => {
  const sshString = (bytes: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, bytes.length]), bytes]);
  const line = (...fields: Buffer[]) => `${fields[0]} ${Buffer.concat(fields.map(sshString)).toString('base64')} x@y`;

  it('refuses an RSA key whose numbers are no key', () => {
    expect(() => parsePublicKey(line(Buffer.from('ssh-rsa'), Buffer.from([1, 0, 1]), Buffer.alloc(0x7f)), 'bad')).toThrow(
      /^Invalid ssh_public_key: expected/,
    );
  });

  it('refuses a key type it does not take', () => {
    expect(() => parsePublicKey(line(Buffer.from('ssh-dss'), Buffer.from([1]), Buffer.from([2])), 'old')).toThrow(
      /^Invalid ssh_public_key: expected/,
    );
  });
});
