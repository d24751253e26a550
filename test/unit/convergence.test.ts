import {
  absenceConcluded,
  claimOf,
  destructionConfirmed,
  driftOf,
  readoptionOf,
  lookForStartedAction,
  ownershipOf,
  orphanJobOutcome,
  planOrphans,
  settleFromUpstream,
  settledActionOutcome,
  startKnownNotTaken,
  startedAction,
} from '../../shared/model/convergence';
import type { UpstreamActionRecord, UpstreamServer } from '../../shared/model/server';

const small = { flavor: 's-1vcpu-2gb', vcpu: 1, ram_mb: 2048, disk_gb: 30, hourly_price: 0.01786 };
const large = { flavor: 's-2vcpu-4gb', vcpu: 2, ram_mb: 4096, disk_gb: 40, hourly_price: 0.03571 };
const JOB_START = '2026-11-23T04:00:00.400Z';

const instance = (overrides = {}) => ({
  status: 'active' as const,
  plan: small,
  pending_plan: null,
  paused_by: null,
  capacity_held: true,
  active_job_id: 'job-1',
  upstream_id: 7,
  seen_at: null,
  metered_until: '2026-11-23T03:55:00.000Z',
  sealed_secrets: 'sealed-credentials' as string | null,
  ...overrides,
});
const server = (overrides: Partial<UpstreamServer> = {}): UpstreamServer => ({
  id: 7,
  name: 'vps-1',
  status: 'active',
  ipv4: '203.0.113.2',
  sizeSlug: 's-1vcpu-2gb',
  diskGb: 30,
  tags: [],
  ...overrides,
});
const act = (id: number, type: string, status: UpstreamActionRecord['status'], startedAt: string): UpstreamActionRecord => ({
  id,
  type,
  status,
  startedAt,
});

describe('startKnownNotTaken', () => {
  it.each([
    { error: { name: 'UpstreamPermanentError', status: 422 }, known: true },
    { error: { name: 'UpstreamTransientError', status: 429 }, known: true },
    { error: { name: 'UpstreamTransientError', status: 503 }, known: false },
    { error: { name: 'UpstreamTransientError' }, known: false },
  ])('is $known for $error', ({ error, known }) => {
    expect(startKnownNotTaken(error)).toBe(known);
  });
});

describe('startedAction', () => {
  it.each([
    {
      why: "the job's action, started in the job's first second",
      actions: [act(1, 'shutdown', 'completed', '2026-11-23T04:00:00Z')],
      found: 1,
    },
    { why: 'nothing before the job began', actions: [act(1, 'shutdown', 'completed', '2026-11-23T03:59:59Z')], found: undefined },
    { why: 'nothing of another type', actions: [act(1, 'reboot', 'completed', '2026-11-23T04:00:01Z')], found: undefined },
    {
      why: 'the newest when there are several',
      actions: [act(3, 'shutdown', 'in-progress', '2026-11-23T04:00:05Z'), act(2, 'shutdown', 'completed', '2026-11-23T04:00:01Z')],
      found: 3,
    },
  ])('finds $why', ({ actions, found }) => {
    expect(startedAction(actions, 'shutdown', JOB_START)?.id).toBe(found);
  });

  it("skips an earlier job's action of the same type in the same second once the job's previous action is known", () => {
    // Arrange: power_on #4 (a previous job) and the resize's own shutdown #5 both began in the job's first second.
    const actions = [act(4, 'power_on', 'completed', '2026-11-23T04:00:00Z'), act(5, 'shutdown', 'completed', '2026-11-23T04:00:00Z')];

    // Act / Assert
    expect(startedAction(actions, 'power_on', JOB_START)?.id).toBe(4);
    expect(startedAction(actions, 'power_on', JOB_START, 5)).toBeUndefined();
    expect(startedAction([...actions, act(6, 'power_on', 'in-progress', '2026-11-23T04:00:01Z')], 'power_on', JOB_START, 5)?.id).toBe(6);
  });
});

describe('lookForStartedAction', () => {
  const start = Date.parse(JOB_START);
  it.each([
    { actions: [act(9, 'resize', 'in-progress', '2026-11-23T04:00:02Z')], now: start + 1_000, outcome: { kind: 'found', actionId: 9 } },
    { actions: [], now: start + 59_999, outcome: { kind: 'keep-looking' } },
    { actions: [], now: start + 60_000, outcome: { kind: 'not-taken' } },
    { actions: [act(9, 'resize', 'completed', '2026-11-23T04:00:02Z')], now: start + 120_000, outcome: { kind: 'found', actionId: 9 } },
  ])('answers $outcome.kind with $actions.length action(s) at +$now ms', ({ actions, now, outcome }) => {
    expect(lookForStartedAction(actions, 'resize', JOB_START, now, 60_000)).toEqual(outcome);
  });
});

describe('settleFromUpstream', () => {
  it.each([
    {
      why: 'waits while an action of the job is in progress',
      instance: instance(),
      server: server({ status: 'off' }),
      actions: [act(1, 'shutdown', 'in-progress', '2026-11-23T04:00:01Z')],
      expected: { kind: 'wait' },
    },
    {
      why: 'ignores actions in progress from before the job',
      instance: instance(),
      server: server({ status: 'off' }),
      actions: [act(1, 'shutdown', 'in-progress', '2026-11-23T03:59:00Z')],
      expected: {
        kind: 'settle',
        changes: { status: 'stopped', paused_by: 'user', active_job_id: null, pending_plan: null },
        reserve: [],
        release: [],
      },
    },
    {
      why: 'follows a server that is running',
      instance: instance({ status: 'stopped', paused_by: 'billing' }),
      server: server(),
      actions: [act(1, 'power_on', 'completed', '2026-11-23T04:00:01Z')],
      expected: {
        kind: 'settle',
        changes: { status: 'active', paused_by: null, active_job_id: null, pending_plan: null },
        reserve: [],
        release: [],
      },
    },
    {
      why: 'keeps a billing pause on a server that is off',
      instance: instance({ status: 'active', paused_by: 'billing' }),
      server: server({ status: 'off' }),
      actions: [],
      expected: {
        kind: 'settle',
        changes: { status: 'stopped', paused_by: 'billing', active_job_id: null, pending_plan: null },
        reserve: [],
        release: [],
      },
    },
    {
      why: 'takes the new plan of a server that was resized, giving the old tier back',
      instance: instance({ status: 'resizing', pending_plan: large }),
      server: server({ status: 'off', sizeSlug: 's-2vcpu-4gb' }),
      actions: [act(1, 'resize', 'completed', '2026-11-23T04:00:01Z')],
      expected: {
        kind: 'settle',
        changes: { status: 'stopped', paused_by: 'user', active_job_id: null, pending_plan: null, plan: large },
        reserve: [],
        release: [{ kind: 'tier', flavor: 's-1vcpu-2gb' }],
      },
    },
    {
      why: 'keeps the old plan of a server that was not resized, giving the reserved tier back',
      instance: instance({ status: 'resizing', pending_plan: large }),
      server: server({ status: 'off' }),
      actions: [act(1, 'resize', 'errored', '2026-11-23T04:00:01Z')],
      expected: {
        kind: 'settle',
        changes: { status: 'stopped', paused_by: 'user', active_job_id: null, pending_plan: null },
        reserve: [],
        release: [{ kind: 'tier', flavor: 's-2vcpu-4gb' }],
      },
    },
    {
      why: 'fails the instance whose server is gone, releasing everything it holds',
      instance: instance({ status: 'resizing', pending_plan: large, seen_at: '2026-11-23T03:58:00.000Z' }),
      server: null,
      actions: [],
      expected: {
        kind: 'lost',
        changes: {
          status: 'failed',
          failure: { code: 'server_lost', message: 'The server no longer exists upstream' },
          capacity_held: false,
          pending_plan: null,
          active_job_id: null,
          billing_ends_at: '2026-11-23T03:58:00.000Z',
          sealed_secrets: 'sealed-credentials',
        },
        reserve: [],
        release: [{ kind: 'ipv4' }, { kind: 'tier', flavor: 's-1vcpu-2gb' }, { kind: 'tier', flavor: 's-2vcpu-4gb' }],
      },
    },
  ])('$why', ({ instance: stored, server: reported, actions, expected }) => {
    expect(settleFromUpstream(stored, JOB_START, reported, actions)).toEqual(expected);
  });
});

describe('settledActionOutcome', () => {
  const AFTER = '2026-11-23T04:00:01.000Z';
  const BEFORE = '2026-11-23T03:59:00.000Z';
  const interrupted = { code: 'interrupted' as const, message: 'The action was interrupted' };
  const succeeded = { status: 'succeeded' };
  const failedInterrupted = { status: 'failed', failure: interrupted };
  it.each([
    {
      why: 'a power-off whose server is off succeeded',
      type: 'power_off' as const,
      server: server({ status: 'off' }),
      actions: [],
      outcome: succeeded,
    },
    {
      why: 'a power-off whose server still runs failed',
      type: 'power_off' as const,
      server: server(),
      actions: [],
      outcome: failedInterrupted,
    },
    { why: 'a power-on whose server runs succeeded', type: 'power_on' as const, server: server(), actions: [], outcome: succeeded },
    {
      why: 'a reboot with a reboot completed since the job began succeeded',
      type: 'reboot' as const,
      server: server(),
      actions: [act(5, 'reboot', 'completed', AFTER)],
      outcome: succeeded,
    },
    {
      why: 'a reboot whose only reboot is older than the job failed',
      type: 'reboot' as const,
      server: server(),
      actions: [act(5, 'reboot', 'completed', BEFORE)],
      outcome: failedInterrupted,
    },
    {
      why: 'a resize of a running server resized and running again succeeded',
      type: 'resize' as const,
      server: server({ sizeSlug: 's-2vcpu-4gb' }),
      actions: [act(5, 'shutdown', 'completed', AFTER), act(6, 'resize', 'completed', AFTER), act(7, 'power_on', 'completed', AFTER)],
      outcome: succeeded,
    },
    {
      why: 'a resize of a running server resized but left off failed',
      type: 'resize' as const,
      server: server({ status: 'off', sizeSlug: 's-2vcpu-4gb' }),
      actions: [act(5, 'shutdown', 'completed', AFTER), act(6, 'resize', 'completed', AFTER)],
      outcome: failedInterrupted,
    },
    {
      why: 'a resize of a stopped server resized succeeded',
      type: 'resize' as const,
      server: server({ status: 'off', sizeSlug: 's-2vcpu-4gb' }),
      actions: [act(6, 'resize', 'completed', AFTER)],
      outcome: succeeded,
    },
    {
      why: 'a resize whose upstream resize errored failed with the upstream error',
      type: 'resize' as const,
      server: server({ status: 'off' }),
      actions: [act(6, 'resize', 'errored', AFTER)],
      outcome: { status: 'failed', failure: { code: 'upstream_error', message: 'The upstream action failed' } },
    },
    {
      why: 'an action whose server is concluded gone lost it',
      type: 'power_off' as const,
      server: null,
      actions: [],
      outcome: { status: 'failed', failure: { code: 'server_lost', message: 'The server no longer exists upstream' } },
    },
  ])('$why', ({ type, server: reported, actions, outcome }) => {
    expect(settledActionOutcome(type, { pending_plan: large }, JOB_START, reported, actions, interrupted)).toEqual(outcome);
  });
});

describe('orphanJobOutcome', () => {
  const interrupted = {
    status: 'failed',
    failure: { code: 'interrupted', message: 'The job was interrupted; the instance was settled to what the upstream reports' },
  };
  it.each([
    { job: { type: 'provision' as const }, instance: { status: 'active' as const, deleted_at: null }, outcome: { status: 'succeeded' } },
    { job: { type: 'provision' as const }, instance: { status: 'failed' as const, deleted_at: null }, outcome: interrupted },
    {
      job: { type: 'provision' as const },
      instance: { status: 'deleting' as const, deleted_at: '2026-11-23T04:00:00Z' },
      outcome: interrupted,
    },
    { job: { type: 'reboot' as const }, instance: { status: 'active' as const, deleted_at: null }, outcome: interrupted },
    { job: { type: 'delete' as const }, instance: undefined, outcome: interrupted },
  ])('ends a $job.type job of an instance that is $instance.status as $outcome.status', ({ job, instance: stored, outcome }) => {
    expect(orphanJobOutcome(job, stored)).toEqual(outcome);
  });
});

describe('ownershipOf', () => {
  it.each([
    { server: { tags: ['vps-local', 'vps-local-instance-1'] }, ownership: 'ours' },
    { server: { tags: ['vps-local', 'vps-local-instance-12'] }, ownership: 'foreign' },
    { server: null, ownership: 'gone' },
  ])('is $ownership for $server', ({ server: reported, ownership }) => {
    expect(ownershipOf(reported, 'vps-local-instance-1')).toBe(ownership);
  });
});

describe('driftOf', () => {
  const TAG = 'vps-local-instance-1';
  const ours = (overrides: Partial<UpstreamServer> = {}) => server({ tags: [TAG], ...overrides });
  const planOf = (flavor: string) => ({ 's-1vcpu-2gb': small, 's-2vcpu-4gb': large })[flavor];
  const settled = (overrides = {}) => instance({ active_job_id: null, ...overrides });

  it.each([
    { why: 'nothing for a server that matches', stored: settled(), reported: ours(), expected: undefined },
    {
      why: 'power for a server turned off out of band',
      stored: settled(),
      reported: ours({ status: 'off' }),
      expected: { kinds: ['power'], changes: { status: 'stopped', paused_by: 'user' }, reserve: [], release: [] },
    },
    {
      why: 'power for a server turned on out of band',
      stored: settled({ status: 'stopped', paused_by: 'user' }),
      reported: ours(),
      expected: { kinds: ['power'], changes: { status: 'active', paused_by: null }, reserve: [], release: [] },
    },
    {
      why: 'size, moving the tier unit, for a server resized out of band',
      stored: settled({ status: 'stopped', paused_by: 'user' }),
      reported: ours({ status: 'off', sizeSlug: 's-2vcpu-4gb' }),
      expected: {
        kinds: ['size'],
        changes: { plan: large },
        reserve: [{ kind: 'tier', flavor: 's-2vcpu-4gb' }],
        release: [{ kind: 'tier', flavor: 's-1vcpu-2gb' }],
      },
    },
    {
      why: 'vanished for a server that is gone, billing ending when it was last seen',
      stored: settled({ seen_at: '2026-11-23T03:59:00.000Z' }),
      reported: null,
      expected: {
        kinds: ['vanished'],
        changes: {
          status: 'failed',
          failure: { code: 'server_lost', message: 'The server no longer exists upstream' },
          capacity_held: false,
          pending_plan: null,
          active_job_id: null,
          billing_ends_at: '2026-11-23T03:59:00.000Z',
          sealed_secrets: 'sealed-credentials',
        },
        reserve: [],
        release: [{ kind: 'ipv4' }, { kind: 'tier', flavor: 's-1vcpu-2gb' }],
      },
    },
    {
      why: "foreign for a server carrying another instance's tag",
      stored: settled(),
      reported: server({ tags: ['vps-local-instance-2'] }),
      expected: {
        kinds: ['foreign'],
        changes: {
          status: 'failed',
          failure: { code: 'server_lost', message: 'The server found upstream is not this instance’s; it was left untouched' },
          capacity_held: false,
          pending_plan: null,
          active_job_id: null,
          billing_ends_at: '2026-11-23T03:55:00.000Z',
          sealed_secrets: 'sealed-credentials',
        },
        reserve: [],
        release: [{ kind: 'ipv4' }, { kind: 'tier', flavor: 's-1vcpu-2gb' }],
      },
    },
    { why: 'nothing for a size we do not sell', stored: settled(), reported: ours({ sizeSlug: 's-1vcpu-1gb' }), expected: undefined },
  ])('finds $why', ({ stored, reported, expected }) => {
    expect(driftOf(stored, reported, TAG, planOf)).toEqual(expected);
  });
});

describe('absenceConcluded', () => {
  const rule = { reads: 3, windowSeconds: 600 };
  const evidence = (reads: number, since: string, last: string) => ({ absent_reads: reads, absent_since: since, absent_last_at: last });

  it.each([
    { case: 'no evidence', evidence: {}, concluded: false },
    { case: 'one read', evidence: evidence(1, '2026-11-23T04:00:00.000Z', '2026-11-23T04:00:00.000Z'), concluded: false },
    { case: 'many reads within a minute', evidence: evidence(9, '2026-11-23T04:00:00.000Z', '2026-11-23T04:01:00.000Z'), concluded: false },
    {
      case: 'two reads ten minutes apart',
      evidence: evidence(2, '2026-11-23T04:00:00.000Z', '2026-11-23T04:10:00.000Z'),
      concluded: false,
    },
    {
      case: 'three reads a second short of the window',
      evidence: evidence(3, '2026-11-23T04:00:00.000Z', '2026-11-23T04:09:59.000Z'),
      concluded: false,
    },
    {
      case: 'three reads ten minutes apart',
      evidence: evidence(3, '2026-11-23T04:00:00.000Z', '2026-11-23T04:10:00.000Z'),
      concluded: true,
    },
  ])('is $concluded for $case', ({ evidence: kept, concluded }) => {
    expect(absenceConcluded(kept, rule)).toBe(concluded);
  });
});

describe('destructionConfirmed', () => {
  const rule = { reads: 3, windowSeconds: 30 };
  const deleteStartedAt = '2026-11-23T04:00:00.000Z';
  const evidence = (reads: number, since: string, last: string) => ({ absent_reads: reads, absent_since: since, absent_last_at: last });

  it.each([
    { case: 'no read by id has missed it', evidence: {}, confirmed: false },
    { case: 'one read that missed it', evidence: evidence(1, '2026-11-23T04:00:05.000Z', '2026-11-23T04:00:05.000Z'), confirmed: false },
    {
      case: 'three reads within ten seconds',
      evidence: evidence(3, '2026-11-23T04:00:05.000Z', '2026-11-23T04:00:15.000Z'),
      confirmed: false,
    },
    {
      case: 'three reads over the window, begun before the delete',
      evidence: evidence(3, '2026-11-23T03:59:00.000Z', '2026-11-23T04:00:10.000Z'),
      confirmed: false,
    },
    {
      case: 'three reads over the window since the delete began',
      evidence: evidence(3, '2026-11-23T04:00:05.000Z', '2026-11-23T04:00:35.000Z'),
      confirmed: true,
    },
  ])('is $confirmed for $case', ({ evidence: kept, confirmed }) => {
    expect(destructionConfirmed(kept, deleteStartedAt, rule)).toBe(confirmed);
  });
});

describe('planOrphans', () => {
  const limits = { maxFoundPerRun: 10, maxDestroyedPerRun: 5 };
  const servers = (count: number, first: number) => Array.from({ length: count }, (_, n) => first + n);

  it('acts on every orphan met when the run met no more than the guard allows', () => {
    expect(planOrphans({ found: servers(10, 1), due: servers(5, 101) }, limits, false)).toEqual({
      found: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      destroyed: [101, 102, 103, 104, 105],
      trip: null,
    });
  });

  it('acts on none of them and trips when the run found more servers orphaned than the guard allows', () => {
    expect(planOrphans({ found: servers(12, 1), due: servers(1, 101) }, limits, false)).toEqual({
      found: [],
      destroyed: [],
      trip: 'more than 10 servers found orphaned in one run',
    });
  });

  it('acts on none of them and trips when more orphans are due for destruction than the guard allows', () => {
    expect(planOrphans({ found: servers(1, 1), due: servers(6, 101) }, limits, false)).toEqual({
      found: [],
      destroyed: [],
      trip: 'more than 5 orphaned servers due for destruction in one run',
    });
  });

  it('acts on every orphan met in the run after an operator resumed, however many', () => {
    expect(planOrphans({ found: servers(12, 1), due: servers(6, 101) }, limits, true)).toEqual({
      found: servers(12, 1),
      destroyed: [101, 102, 103, 104, 105, 106],
      trip: null,
    });
  });
});

describe('claimOf', () => {
  const record = (overrides = {}) => ({
    status: 'active' as const,
    upstream_id: 7,
    deleted_at: null,
    activated_at: '2026-11-23T03:00:00.000Z',
    ...overrides,
  });

  it.each([
    { case: 'a live instance’s recorded server', instance: record(), claim: 'owned' },
    {
      case: 'a server of an instance being created (none recorded yet)',
      instance: record({ status: 'provisioning', upstream_id: null, activated_at: null }),
      claim: 'owned',
    },
    {
      case: 'a server of an instance being deleted',
      instance: record({ status: 'deleting', deleted_at: '2026-11-23T05:00:00.000Z' }),
      claim: 'owned',
    },
    { case: 'a quarantined instance’s server', instance: record({ status: 'quarantined' }), claim: 'owned' },
    { case: 'a second server of a live instance', instance: record({ upstream_id: 8 }), claim: 'orphan' },
    { case: 'the server of an instance lost by inference', instance: record({ status: 'failed' }), claim: 'readopt' },
    { case: 'a server of a failed create (never active)', instance: record({ status: 'failed', activated_at: null }), claim: 'orphan' },
    { case: 'another server of a lost instance', instance: record({ status: 'failed', upstream_id: 8 }), claim: 'orphan' },
    {
      case: 'a server of a lost instance its owner deleted',
      instance: record({ status: 'failed', deleted_at: '2026-11-23T05:00:00.000Z' }),
      claim: 'orphan',
    },
    {
      case: 'a server of a destroyed instance',
      instance: record({ status: 'destroyed', deleted_at: '2026-11-23T05:00:00.000Z' }),
      claim: 'orphan',
    },
    { case: 'a server whose tag names no instance', instance: undefined, claim: 'orphan' },
  ])('is $claim for $case', ({ instance: owner, claim }) => {
    expect(claimOf({ id: 7 }, owner)).toBe(claim);
  });
});

describe('readoptionOf', () => {
  const lost = instance({ status: 'failed', capacity_held: false, active_job_id: null, paused_by: null });
  const planOf = (flavor: string) => (flavor === large.flavor ? large : undefined);

  it('restores a running server as active, holding capacity again and billed again', () => {
    expect(readoptionOf(lost, server(), planOf)).toEqual({
      changes: {
        status: 'active',
        paused_by: null,
        plan: small,
        pending_plan: null,
        active_job_id: null,
        capacity_held: true,
        billing_ends_at: null,
        ipv4: '203.0.113.2',
      },
      reserve: [{ kind: 'ipv4' }, { kind: 'tier', flavor: 's-1vcpu-2gb' }],
      release: [],
    });
  });

  it('restores a powered-off server resized meanwhile as stopped at its new size', () => {
    const change = readoptionOf(lost, server({ status: 'off', sizeSlug: 's-2vcpu-4gb' }), planOf);
    expect(change.changes).toMatchObject({ status: 'stopped', paused_by: 'user', plan: large });
    expect(change.reserve).toEqual([{ kind: 'ipv4' }, { kind: 'tier', flavor: 's-2vcpu-4gb' }]);
  });
});
