import type { Deps } from './deps';
import { namedError } from '../model/errors';
import { metricNames } from '../metric-names';
import { countMetric, durationMetric, logger } from '../observability';
import { getInstanceItem, transitionInstance, updateInstanceWithRetry } from '../store/instances';
import { heldPools } from '../model/capacity';
import { type Instance } from '../model/instance';
import { finishJob } from '../store/jobs';
import { failedWith } from '../model/job';
import { failure, sshTimeoutFailure, type FailureReason } from '../model/failure';
import { sshReadiness } from './ssh-readiness';
import { upstream } from './upstream';
import type { UpstreamDriver } from '../upstream/driver';
import type { InstanceStatus } from '../schemas/instances';
import { serviceTag, upstreamTagOf } from './instances';
import { labelTags } from '../model/labels';
import { holdBillingPause } from './billing';
import { openInstanceSecrets, openUserData } from './instance-secrets';
import { credentialsCloudConfig, serverUserData } from '../model/user-data';
import type { CheckServerInput, CompensateInput, ProbeSshInput, ProvisionInput } from './step-inputs';

const UBUNTU_IMAGE = 'ubuntu-24-04-x64';

const PROVISIONING_STATUSES: InstanceStatus[] = ['pending', 'provisioning'];

/** Thrown when the server does not become active within the budget; the workflow compensates. */
export class ProvisionTimeoutError extends namedError('ProvisionTimeoutError') {}

export type CreateServerResult =
  | { upstream_id: number; abandoned: false; waiting: false }
  | { upstream_id: null; abandoned: true; waiting: false }
  | { upstream_id: null; abandoned: false; waiting: true };

/**
 * Creates the instance's server, unless one carrying its tag exists already (a retried step never doubles it). After
 * a create whose answer was lost, the upstream may still be carrying it out: until the window has passed the step
 * answers `waiting` and the workflow looks again, rather than create a second server.
 */
export async function createServerStep(deps: Deps, { instance_id }: ProvisionInput): Promise<CreateServerResult> {
  const instance = await getInstanceItem(deps, instance_id);
  if (!instance || instance.deleted_at !== null || !PROVISIONING_STATUSES.includes(instance.status)) {
    return { upstream_id: null, abandoned: true, waiting: false };
  }
  const driver = await upstream(deps);
  const tag = upstreamTagOf(deps, instance_id);
  // Should two exist, the oldest is the instance's; the reconciler destroys the other as a leak.
  let [server] = (await driver.listServersByTag(tag)).sort((a, b) => a.id - b.id);
  if (!server) {
    const requestedAt = instance.create_requested_at === null ? undefined : Date.parse(instance.create_requested_at);
    if (requestedAt !== undefined && deps.clock.now().getTime() - requestedAt < deps.config.unknownOutcomeWindowSeconds * 1000) {
      return { upstream_id: null, abandoned: false, waiting: true };
    }
    const noted = await transitionInstance(deps, instance_id, PROVISIONING_STATUSES, {
      create_requested_at: deps.clock.now().toISOString(),
    });
    if (!noted) return { upstream_id: null, abandoned: true, waiting: false };
    const secrets = await openInstanceSecrets(deps, instance);
    if (!secrets) throw new Error(`instance ${instance_id} has no credentials to provision with`);
    server = await driver.createServer({
      name: `vps-${instance_id}`,
      size: instance.plan.flavor,
      image: UBUNTU_IMAGE,
      userData: serverUserData(
        credentialsCloudConfig(instance_id, instance.ssh_key.public_key, secrets.root_password),
        await openUserData(deps, instance),
      ),
      tags: [tag, serviceTag(deps), ...labelTags(instance.labels)],
    });
  }
  const moved = await transitionInstance(deps, instance_id, PROVISIONING_STATUSES, {
    status: 'provisioning',
    vps_id: String(server.id),
    upstream_id: server.id,
  });
  if (moved) return { upstream_id: server.id, abandoned: false, waiting: false };
  // Deleted while the server was being made: the delete may already have looked for it, so destroy it here.
  await driver.deleteServer(server.id);
  return { upstream_id: null, abandoned: true, waiting: false };
}

/**
 * Where a provision stands after a poll: `ready` once the instance is active; `abandoned` when it was deleted (or
 * another run activated it); `booted` once the upstream runs the server and its SSH is awaited: since `booted_at`,
 * looked at again after `wait_seconds`.
 */
export type ProvisionProgress =
  | { readonly ready: boolean; readonly abandoned: boolean; readonly booted: false }
  | { readonly ready: false; readonly abandoned: false; readonly booted: true; readonly booted_at: string; readonly wait_seconds: number };

const ACTIVE: ProvisionProgress = { ready: true, abandoned: false, booted: false };
const ABANDONED: ProvisionProgress = { ready: false, abandoned: true, booted: false };

/** Thrown when the server runs but its SSH does not answer within the wait; the workflow compensates. */
class SshTimeoutError extends namedError('SshTimeoutError') {}

/**
 * One poll of the new server. A server the upstream does not find now is not taken as lost (it answers 404 for
 * existing servers for short periods, new ones most of all): the workflow polls again, within the provisioning budget.
 * Once the upstream runs it, its address is recorded and its SSH probed: `active` means reachable by SSH.
 */
export async function checkServerStep(deps: Deps, input: CheckServerInput): Promise<ProvisionProgress> {
  const elapsedSeconds = () => (deps.clock.now().getTime() - Date.parse(input.started_at)) / 1000;
  const server = await (await upstream(deps)).getServer(input.upstream_id).catch((error: unknown) => {
    // Reads that keep failing are polled again, but only within the provisioning budget.
    if (elapsedSeconds() > deps.config.provisionTimeoutSeconds)
      throw new ProvisionTimeoutError(`server status unknown after ${Math.round(elapsedSeconds())} s`);
    throw error;
  });
  if (server?.status === 'active' && server.ipv4) {
    const booted = await transitionInstance(deps, input.instance_id, ['provisioning'], { ipv4: server.ipv4 });
    if (!booted) return await settledElsewhere(deps, input.instance_id);
    return await probeAndActivate(deps, booted, input.job_id, deps.clock.now().toISOString());
  }
  if (elapsedSeconds() > deps.config.provisionTimeoutSeconds) {
    throw new ProvisionTimeoutError(`server not active after ${Math.round(elapsedSeconds())} s`);
  }
  return { ready: false, abandoned: false, booted: false };
}

/** One SSH probe of a server the upstream runs; past the wait with no answer, SshTimeoutError (the workflow compensates). */
export async function probeSshStep(deps: Deps, input: ProbeSshInput): Promise<ProvisionProgress> {
  const instance = await getInstanceItem(deps, input.instance_id);
  if (!instance || instance.deleted_at !== null || instance.status !== 'provisioning' || instance.ipv4 === null) {
    return await settledElsewhere(deps, input.instance_id);
  }
  return await probeAndActivate(deps, instance, input.job_id, input.booted_at);
}

/** A provision another run (or a delete) has moved past: done if the instance is active, abandoned otherwise. */
async function settledElsewhere(deps: Deps, instanceId: number): Promise<ProvisionProgress> {
  const instance = await getInstanceItem(deps, instanceId);
  // Also after a retry that finds it already active: the step that made it running applies the billing pause.
  if (instance?.status === 'active' && instance.deleted_at === null) await holdBillingPause(deps, instanceId);
  return ABANDONED;
}

async function probeAndActivate(deps: Deps, instance: Instance, jobId: string, bootedAt: string): Promise<ProvisionProgress> {
  const readiness = await sshReadiness(deps, instance, bootedAt);
  if (readiness.kind === 'answered') return await activate(deps, instance.instance_id, jobId);
  if (readiness.kind === 'timed_out') {
    throw new SshTimeoutError(`SSH did not answer within ${readiness.waited_seconds} s of the server running`);
  }
  return { ready: false, abandoned: false, booted: true, booted_at: bootedAt, wait_seconds: readiness.wait_seconds };
}

/** The server answers SSH: the instance is active from now, and its provision job ends, in one transaction. */
async function activate(deps: Deps, instanceId: number, jobId: string): Promise<ProvisionProgress> {
  const now = deps.clock.now().toISOString();
  const activated = await updateInstanceWithRetry(deps, instanceId, (instance) =>
    instance.status === 'provisioning' && instance.deleted_at === null
      ? {
          // The server has run the user data: it is not kept past its use.
          changes: { status: 'active', activated_at: now, metered_until: now, sealed_user_data: null },
          finish: { job_id: jobId, outcome: { status: 'succeeded' }, at: now },
        }
      : undefined,
  );
  // Also after a retry that finds it already active: the step that made it running applies the billing pause.
  if (activated?.status === 'active') await holdBillingPause(deps, instanceId);
  if (activated?.activated_at !== now) return ABANDONED;
  countMetric(metricNames.provisionSucceeded);
  durationMetric(metricNames.provisionDuration, Date.parse(now) - Date.parse(activated.created_at ?? now));
  return ACTIVE;
}

/** What a client may read about a failed provision (the job's and the instance's `failure`): never upstream or internal details. */
const provisionFailures: Record<string, FailureReason> = {
  UpstreamPermanentError: failure('upstream_error', 'The upstream refused to create the server'),
  UpstreamCapacityError: failure('capacity', 'The upstream has no room for this flavor now'),
  UpstreamTransientError: failure('upstream_error', 'The upstream kept failing'),
  ProvisionTimeoutError: failure('provision_timeout', 'The server did not become active in time'),
  SshTimeoutError: sshTimeoutFailure,
  ProvisionAbandoned: failure('interrupted', 'Provisioning was interrupted before the server was ready; its server, if any, was destroyed'),
};
const provisionFailure = (errorName: string | undefined) =>
  provisionFailures[errorName ?? ''] ?? failure('upstream_error', 'Provisioning failed');

/**
 * Undoes a failed provision: destroys the instance's servers (the recorded one by id, any other by its tag), gives back the IPv4
 * address and tier capacity exactly once, and marks the instance and its job failed. Safe to retry.
 */
export async function compensateStep(deps: Deps, { instance_id, job_id, error }: CompensateInput): Promise<{ compensated: boolean }> {
  return { compensated: await failProvision(deps, instance_id, job_id, error?.Error) };
}

/**
 * Undoes a provision that cannot finish: destroys its recorded server by id and every other upstream server carrying
 * the instance's tag, gives back its capacity exactly once, and marks the instance and its job failed. False when there was nothing to undo.
 */
export async function failProvision(
  deps: Deps,
  instanceId: number,
  jobId: string | undefined,
  errorName: string | undefined,
): Promise<boolean> {
  const instance = await getInstanceItem(deps, instanceId);
  const live = instance !== undefined && instance.deleted_at === null;
  if (live && !PROVISIONING_STATUSES.includes(instance.status)) {
    // Provisioning got past the point of failure (the instance is active): there is nothing to undo.
    return false;
  }
  logger.warn('provisioning failed; compensating', { cause: errorName });
  countMetric(metricNames.provisionFailed);
  if (errorName?.startsWith('Upstream')) countMetric(metricNames.upstreamErrors);
  const driver = await upstream(deps);
  await Promise.all([
    destroyUnrecordedServers(deps, driver, { instance_id: instanceId, upstream_id: instance?.upstream_id ?? null }),
    // By id: a listing that leaves the server out proves nothing.
    instance?.upstream_id != null ? driver.deleteServer(instance.upstream_id) : undefined,
  ]);
  const reason = provisionFailure(errorName);
  const finish = jobId ? { job_id: jobId, outcome: failedWith(reason), at: deps.clock.now().toISOString() } : undefined;
  if (live) {
    await updateInstanceWithRetry(deps, instanceId, (current) =>
      current.deleted_at === null && PROVISIONING_STATUSES.includes(current.status)
        ? { changes: { status: 'failed', failure: reason, capacity_held: false, pending_plan: null }, release: heldPools(current), finish }
        : undefined,
    );
  }
  if (finish) await finishJob(deps, finish.job_id, finish.outcome, finish.at);
  return true;
}

/**
 * Destroys every server a listing by the instance's tag shows other than its recorded one (a create whose answer was
 * lost, a second server); returns how many it found. The recorded server is destroyed by id by the caller.
 */
export async function destroyUnrecordedServers(
  deps: Deps,
  driver: UpstreamDriver,
  instance: Pick<Instance, 'instance_id' | 'upstream_id'>,
): Promise<number> {
  const servers = (await driver.listServersByTag(upstreamTagOf(deps, instance.instance_id))).filter(
    (server) => server.id !== instance.upstream_id,
  );
  await Promise.all(servers.map((server) => driver.deleteServer(server.id)));
  return servers.length;
}
