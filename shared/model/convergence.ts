/**
 * Lifecycle decisions as pure code: given the stored instance, its job and what the upstream reports, what changes.
 * No I/O here (no AWS, no HTTP): the workflow steps, the API and the reconciler read the facts, ask these functions,
 * and write the answer conditionally.
 */
import type { CapacityPool } from './capacity';
import type { InstanceChanges, Instance } from './instance';
import { failedWith, type Job, type JobOutcome } from './job';
import { failure, lostFailures, type FailureReason } from './failure';
import type { UpstreamActionRecord, UpstreamServer } from './server';

type InstanceFacts = Pick<
  Instance,
  | 'status'
  | 'plan'
  | 'pending_plan'
  | 'paused_by'
  | 'capacity_held'
  | 'active_job_id'
  | 'upstream_id'
  | 'seen_at'
  | 'metered_until'
  | 'sealed_secrets'
>;

/**
 * Whether the evidence kept on an instance concludes that its server is gone: enough reads by id that did not find
 * it, the first and the last at least the window apart. One 404 is an observation (the upstream answers 404 for
 * existing servers for short periods, and a token of another team answers it for all of ours); absence is concluded
 * only from several observations over time, and the caller still checks a listing by tag before acting on it.
 */
export function absenceConcluded(
  evidence: Pick<Instance, 'absent_since' | 'absent_last_at' | 'absent_reads'>,
  rule: { readonly reads: number; readonly windowSeconds: number },
): boolean {
  const { absent_since: since, absent_last_at: last, absent_reads: reads } = evidence;
  if (since === undefined || last === undefined || reads === undefined) return false;
  return reads >= rule.reads && Date.parse(last) - Date.parse(since) >= rule.windowSeconds * 1000;
}

/**
 * Whether a deleted instance's server is confirmed destroyed: reads by id since the delete began that did not find it,
 * enough of them and spread over the window, by the same rule as any absence. Evidence from before the delete counts
 * for nothing (it may predate the destroy call), and a listing that leaves the server out proves nothing.
 */
export function destructionConfirmed(
  evidence: Pick<Instance, 'absent_since' | 'absent_last_at' | 'absent_reads'>,
  deleteStartedAt: string,
  rule: { readonly reads: number; readonly windowSeconds: number },
): boolean {
  if (evidence.absent_since === undefined || Date.parse(evidence.absent_since) < Date.parse(deleteStartedAt)) return false;
  return absenceConcluded(evidence, rule);
}

/**
 * What a server carrying our tags is to the service, from the instance its tag names:
 * - `owned`: a live instance's recorded server, or one being created or deleted by its own workflow;
 * - `readopt`: the recorded server of an instance that was lost by inference (it had been running, then failed
 *   because its server was taken for gone): the server is there after all, so the instance is restored from it;
 * - `orphan`: no instance owns it (deleted by the customer, never committed, a failed create's, or a second server
 *   of a live instance): powered off, then destroyed after a grace period.
 */
export type ServerClaim = 'owned' | 'readopt' | 'orphan';

export function claimOf(
  server: Pick<UpstreamServer, 'id'>,
  instance: Pick<Instance, 'status' | 'upstream_id' | 'deleted_at' | 'activated_at'> | undefined,
): ServerClaim {
  if (!instance) return 'orphan';
  if (instance.status === 'failed')
    return instance.deleted_at === null && instance.activated_at !== null && instance.upstream_id === server.id ? 'readopt' : 'orphan';
  if (instance.status === 'destroyed') return 'orphan';
  if (instance.status === 'deleting' || instance.upstream_id === null || instance.upstream_id === server.id) return 'owned';
  return 'orphan';
}

/** What one sweep run does with the orphans it met, decided once it has met them all: count first, act after. */
export interface OrphanPlan<T> {
  /** Servers newly found orphaned: recorded, then powered off. */
  readonly found: readonly T[];
  /** Orphans past their grace period: destroyed. */
  readonly destroyed: readonly T[];
  /** Why the guard trips, when more were met than it allows: then nothing is done to any of them. */
  readonly trip: string | null;
}

/**
 * The blast-radius guard over one run: more servers newly orphaned than `maxFoundPerRun`, or more orphans due for
 * destruction than `maxDestroyedPerRun`, are more likely a fault of ours (a wrong token, a table restored from an old
 * backup) than a leak: none of them is acted on, and the guard trips. Once an operator has looked and resumed, the run
 * that follows acts on all it met.
 */
export function planOrphans<T>(
  met: { readonly found: readonly T[]; readonly due: readonly T[] },
  limits: { readonly maxFoundPerRun: number; readonly maxDestroyedPerRun: number },
  resumedByOperator: boolean,
): OrphanPlan<T> {
  const refuse = (trip: string): OrphanPlan<T> => ({ found: [], destroyed: [], trip });
  if (!resumedByOperator && met.found.length > limits.maxFoundPerRun)
    return refuse(`more than ${limits.maxFoundPerRun} servers found orphaned in one run`);
  if (!resumedByOperator && met.due.length > limits.maxDestroyedPerRun)
    return refuse(`more than ${limits.maxDestroyedPerRun} orphaned servers due for destruction in one run`);
  return { found: met.found, destroyed: met.due, trip: null };
}

/**
 * An instance lost by inference whose server is found again: it takes the server's power state and size (a size we
 * do not sell keeps the plan), holds capacity again and is billed again from now.
 */
export function readoptionOf(
  instance: InstanceFacts,
  server: UpstreamServer,
  planOf: (flavor: string) => Instance['plan'] | undefined,
): Change {
  const plan = server.sizeSlug === instance.plan.flavor ? instance.plan : (planOf(server.sizeSlug) ?? instance.plan);
  return {
    changes: {
      ...poweredChanges(instance, server),
      plan,
      pending_plan: null,
      active_job_id: null,
      capacity_held: true,
      billing_ends_at: null,
      ...(server.ipv4 ? { ipv4: server.ipv4 } : {}),
    },
    reserve: [{ kind: 'ipv4' }, { kind: 'tier', flavor: plan.flavor }],
    release: [],
  };
}

/** Statuses in which a lifecycle is under way whatever the instance's job says. */
const IN_FLIGHT_STATUSES: readonly Instance['status'][] = ['pending', 'provisioning', 'resizing', 'deleting'];

/**
 * Whether a lifecycle is under way on the instance (a transitional status, or an action on a settled one): what the
 * reconciler must watch, so that a workflow that died never leaves it half-way.
 */
export function isInFlight(instance: Pick<Instance, 'status' | 'active_job_id'>): boolean {
  return (
    IN_FLIGHT_STATUSES.includes(instance.status) || (['active', 'stopped'].includes(instance.status) && instance.active_job_id !== null)
  );
}

/** The in-flight index is spread over this many shards (`inflight_shard` = `inflight#<instance id mod 8>`). */
export const IN_FLIGHT_SHARDS = 8;

export const inFlightShardOf = (instanceId: number) => `inflight#${instanceId % IN_FLIGHT_SHARDS}`;

/** Statuses in which an instance has a server, which the fleet sweep must see every pass. */
export const HAS_SERVER: readonly Instance['status'][] = ['active', 'stopped', 'resizing', 'quarantined'];

export function isSwept(instance: Pick<Instance, 'status' | 'upstream_id'>): boolean {
  return HAS_SERVER.includes(instance.status) && instance.upstream_id !== null;
}

/** The sweep's index is spread over this many shards (`sweep_shard` = `sweep#<instance id mod 16>`). */
export const SWEEP_SHARDS = 16;

export const sweepShardOf = (instanceId: number) => `sweep#${instanceId % SWEEP_SHARDS}`;

/** A state change with the capacity that moves with it. */
export interface Change {
  readonly changes: InstanceChanges;
  readonly reserve: CapacityPool[];
  readonly release: CapacityPool[];
}

/**
 * Whether a failed call that would have started an action is known to have done nothing: a refusal (4xx) or a 429,
 * which the upstream answers before acting. A timeout, a lost connection or a 5xx may have been carried out.
 */
export function startKnownNotTaken(error: { readonly name: string; readonly status?: number }): boolean {
  if (error.name === 'UpstreamPermanentError' || error.name === 'UpstreamCapacityError') return true;
  return error.name === 'UpstreamTransientError' && error.status === 429;
}

/** The upstream writes timestamps to the second: an action started in the job's first second may be the job's. */
const secondOf = (iso: string) => Math.floor(Date.parse(iso) / 1000) * 1000;

/** The server's actions that may belong to a job started at `since`. */
function actionsSince(actions: readonly UpstreamActionRecord[], since: string): UpstreamActionRecord[] {
  return actions.filter((action) => Date.parse(action.startedAt) >= secondOf(since));
}

/**
 * The job's action of that upstream type, if the upstream took it (the newest, should there be several). Timestamps
 * are to the second: when the job's previous action is known (`afterActionId`), only a later one (upstream ids
 * increase) can be this one, so an earlier job's action of the same type in the same second is never taken for it.
 */
export function startedAction(
  actions: readonly UpstreamActionRecord[],
  type: string,
  since: string,
  afterActionId = 0,
): UpstreamActionRecord | undefined {
  return actionsSince(actions, since)
    .filter((action) => action.type === type && action.id > afterActionId)
    .sort((a, b) => b.id - a.id)[0];
}

export type LookOutcome =
  { readonly kind: 'found'; readonly actionId: number } | { readonly kind: 'keep-looking' } | { readonly kind: 'not-taken' };

/**
 * After a start whose answer was lost: the action found in the server's list; or, while a request may still be in
 * flight upstream (within `windowMs` of the job's start), look again later; after that, it was not taken.
 */
export function lookForStartedAction(
  actions: readonly UpstreamActionRecord[],
  type: string,
  since: string,
  nowMs: number,
  windowMs: number,
): LookOutcome {
  const found = startedAction(actions, type, since);
  if (found) return { kind: 'found', actionId: found.id };
  return nowMs - Date.parse(since) < windowMs ? { kind: 'keep-looking' } : { kind: 'not-taken' };
}

/**
 * A server that is gone (or is not ours): the instance has lost it; capacity goes back, the action slot frees, and
 * billing ends when the server was last seen (or where metering had got to, if it was never seen by a sweep).
 */
export function lostServerChange(instance: InstanceFacts, reason: FailureReason = lostFailures.gone): Change {
  const lastSeen =
    [instance.seen_at, instance.metered_until]
      .filter((at): at is string => at !== null)
      .sort()
      .at(-1) ?? null;
  return {
    // The credentials stay sealed on the instance: the loss is inferred, and a server found again restores it whole.
    changes: {
      status: 'failed',
      failure: reason,
      capacity_held: false,
      pending_plan: null,
      active_job_id: null,
      billing_ends_at: lastSeen,
      sealed_secrets: instance.sealed_secrets,
    },
    reserve: [],
    release: [
      ...(instance.capacity_held ? [{ kind: 'ipv4' } as const, { kind: 'tier', flavor: instance.plan.flavor } as const] : []),
      ...(instance.pending_plan ? [{ kind: 'tier', flavor: instance.pending_plan.flavor } as const] : []),
    ],
  };
}

/** The power part of the record, as the server's own state says. */
function poweredChanges(instance: InstanceFacts, server: UpstreamServer): InstanceChanges {
  return server.status === 'active'
    ? { status: 'active', paused_by: null }
    : { status: 'stopped', paused_by: instance.paused_by ?? 'user' };
}

/**
 * What an interrupted action settles to, from finished facts only: while any upstream action since the job began is
 * still in progress, nothing (wait); with the server concluded gone (null: never from one read), the instance is lost; otherwise the record takes the
 * server's power state and, for a resize, the plan the server really has (tiers swap, or the reserved one goes back).
 */
export type Settlement = { readonly kind: 'wait' } | ({ readonly kind: 'settle' | 'lost' } & Change);

export function settleFromUpstream(
  instance: InstanceFacts,
  jobStartedAt: string,
  server: UpstreamServer | null,
  actions: readonly UpstreamActionRecord[],
): Settlement {
  if (server === null) return { kind: 'lost', ...lostServerChange(instance) };
  if (actionsSince(actions, jobStartedAt).some((action) => action.status === 'in-progress')) return { kind: 'wait' };
  const changes: InstanceChanges = { ...poweredChanges(instance, server), active_job_id: null, pending_plan: null };
  const pending = instance.pending_plan;
  if (!pending) return { kind: 'settle', changes, reserve: [], release: [] };
  if (server.sizeSlug === pending.flavor) {
    return {
      kind: 'settle',
      changes: { ...changes, plan: pending },
      reserve: [],
      release: [{ kind: 'tier', flavor: instance.plan.flavor }],
    };
  }
  return { kind: 'settle', changes, reserve: [], release: [{ kind: 'tier', flavor: pending.flavor }] };
}

/**
 * How the job of an interrupted action ends, from the finished facts it is settled from: succeeded when the server
 * shows the action took effect (a power-off's server is off, a power-on's runs, a reboot's runs after a reboot
 * completed since the job began, a resize's has the reserved size and runs again if the job had shut it down);
 * otherwise failed, with the upstream's error if one of the job's actions errored, or `reason`. A server concluded
 * gone (null) is the loss.
 */
export function settledActionOutcome(
  type: Job['type'],
  instance: Pick<Instance, 'pending_plan'>,
  jobStartedAt: string,
  server: UpstreamServer | null,
  actions: readonly UpstreamActionRecord[],
  reason: FailureReason,
): JobOutcome {
  if (server === null) return failedWith(lostFailures.gone);
  const own = actionsSince(actions, jobStartedAt);
  const completed = (upstreamType: string) => own.some((action) => action.type === upstreamType && action.status === 'completed');
  const running = server.status === 'active';
  const tookEffect =
    (type === 'power_off' && server.status === 'off') ||
    (type === 'power_on' && running) ||
    (type === 'reboot' && running && completed('reboot')) ||
    (type === 'resize' && server.sizeSlug === instance.pending_plan?.flavor && (running || !completed('shutdown')));
  if (tookEffect) return { status: 'succeeded' };
  if (own.some((action) => action.status === 'errored')) return failedWith(failure('upstream_error', 'The upstream action failed'));
  return failedWith(reason);
}

/** What a running job with no live execution becomes, when its instance no longer points at it. */
export function orphanJobOutcome(job: Pick<Job, 'type'>, instance: Pick<Instance, 'status' | 'deleted_at'> | undefined): JobOutcome {
  if (
    job.type === 'provision' &&
    instance &&
    instance.deleted_at === null &&
    ['active', 'stopped', 'quarantined'].includes(instance.status)
  ) {
    return { status: 'succeeded' };
  }
  return failedWith(failure('interrupted', 'The job was interrupted; the instance was settled to what the upstream reports'));
}

/** Whether a server is the instance's own: it exists and carries the instance's tag. Anything else is never acted on. */
export type Ownership = 'ours' | 'gone' | 'foreign';

export function ownershipOf(server: Pick<UpstreamServer, 'tags'> | null, instanceTag: string): Ownership {
  if (server === null) return 'gone';
  return server.tags.includes(instanceTag) ? 'ours' : 'foreign';
}

export type DriftKind = 'vanished' | 'foreign' | 'power' | 'size';

export interface Drift extends Change {
  readonly kinds: DriftKind[];
}

/**
 * How a settled instance (active or stopped, no action running) differs from its server, and the change that makes
 * the record follow: a server concluded gone (null) or not ours loses the instance; power and size changed out of band are adopted
 * (capacity moves to the new tier). `planOf` knows the plans of the sizes we sell. Undefined when nothing drifted.
 */
export function driftOf(
  instance: InstanceFacts,
  server: UpstreamServer | null,
  instanceTag: string,
  planOf: (flavor: string) => Instance['plan'] | undefined,
): Drift | undefined {
  const ownership = ownershipOf(server, instanceTag);
  if (ownership !== 'ours' || server === null)
    return {
      kinds: [ownership === 'gone' ? 'vanished' : 'foreign'],
      ...lostServerChange(instance, lostFailures[ownership === 'gone' ? 'gone' : 'foreign']),
    };
  const kinds: DriftKind[] = [];
  let changes: InstanceChanges = {};
  const reserve: CapacityPool[] = [];
  const release: CapacityPool[] = [];
  const running = server.status === 'active';
  if (server.status !== 'new' && running !== (instance.status === 'active')) {
    kinds.push('power');
    changes = poweredChanges(instance, server);
  }
  const adopted = server.sizeSlug === instance.plan.flavor ? undefined : planOf(server.sizeSlug);
  if (adopted) {
    kinds.push('size');
    changes = { ...changes, plan: adopted };
    if (instance.capacity_held) {
      reserve.push({ kind: 'tier', flavor: adopted.flavor });
      release.push({ kind: 'tier', flavor: instance.plan.flavor });
    }
  }
  return kinds.length === 0 ? undefined : { kinds, changes, reserve, release };
}
