import type { Deps } from './deps';
import { namedError } from '../model/errors';
import { metricNames } from '../metric-names';
import { countMetric, durationMetric, logger } from '../observability';
import { getInstanceItem, transitionInstance, updateInstanceWithRetry } from '../store/instances';
import { heldPools } from '../model/capacity';
import { type Instance } from '../model/instance';
import { finishJob } from '../store/jobs';
import { upstream } from './upstream';
import type { InstanceStatus } from '../schemas/instances';
import { serviceTag, upstreamTagOf } from './instances';
import { holdBillingPause } from './billing';
import { openInstanceSecrets } from './instance-secrets';
import { isPrintableAscii } from '../model/ssh-keys';
import type { CheckServerInput, CompensateInput, ProvisionInput } from './step-inputs';

const UBUNTU_IMAGE = 'ubuntu-24-04-x64';

const PROVISIONING_STATUSES: InstanceStatus[] = ['pending', 'provisioning'];

/** Thrown when the server does not become active within the budget; the workflow compensates. */
export class ProvisionTimeoutError extends namedError('ProvisionTimeoutError') {}

/**
 * cloud-init user data: the root password and the authorized key the create response promised, each one YAML
 * double-quoted scalar. Both are printable ASCII (checked again here), which JSON quoting escapes so that no YAML or
 * shell reading can split them into another line or key.
 */
export function userDataFor(instance: Instance, rootPassword: string): string {
  if (!isPrintableAscii(rootPassword) || !isPrintableAscii(instance.ssh_key.public_key)) {
    throw new Error(`instance ${instance.instance_id} has credentials that cannot be written into user data safely`);
  }
  return [
    '#cloud-config',
    'ssh_pwauth: true',
    'disable_root: false',
    'chpasswd:',
    '  expire: false',
    '  users:',
    `    - {name: root, password: ${JSON.stringify(rootPassword)}, type: text}`,
    'users:',
    '  - name: root',
    '    ssh_authorized_keys:',
    `      - ${JSON.stringify(instance.ssh_key.public_key)}`,
    '',
  ].join('\n');
}

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
      tags: [tag, serviceTag(deps)],
      size: instance.plan.flavor,
      image: UBUNTU_IMAGE,
      userData: userDataFor(instance, secrets.root_password),
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

export interface CheckServerResult {
  readonly ready: boolean;
  readonly abandoned: boolean;
}

/**
 * One poll of the new server. A server the upstream does not find now is not taken as lost (it answers 404 for
 * existing servers for short periods, new ones most of all): the workflow polls again, within the provisioning budget.
 */
export async function checkServerStep(deps: Deps, input: CheckServerInput): Promise<CheckServerResult> {
  const elapsedSeconds = () => (deps.clock.now().getTime() - Date.parse(input.started_at)) / 1000;
  const server = await (await upstream(deps)).getServer(input.upstream_id).catch((error: unknown) => {
    // Reads that keep failing are polled again, but only within the provisioning budget.
    if (elapsedSeconds() > deps.config.provisionTimeoutSeconds)
      throw new ProvisionTimeoutError(`server status unknown after ${Math.round(elapsedSeconds())} s`);
    throw error;
  });
  if (server?.status === 'active' && server.ipv4) {
    const now = deps.clock.now().toISOString();
    const ipv4 = server.ipv4;
    // The instance write and the job's end are one transaction: no crash can leave the job running.
    const activated = await updateInstanceWithRetry(deps, input.instance_id, (instance) =>
      instance.status === 'provisioning' && instance.deleted_at === null
        ? {
            changes: { status: 'active', ipv4, activated_at: now, metered_until: now },
            finish: { job_id: input.job_id, outcome: { status: 'succeeded' }, at: now },
          }
        : undefined,
    );
    // Also after a retry that finds it already active: the step that made it running applies the billing pause.
    if (activated?.status === 'active') await holdBillingPause(deps, input.instance_id);
    if (activated?.activated_at !== now) return { ready: false, abandoned: true };
    countMetric(metricNames.provisionSucceeded);
    durationMetric(metricNames.provisionDuration, Date.parse(now) - Date.parse(activated.created_at ?? now));
    return { ready: true, abandoned: false };
  }
  if (elapsedSeconds() > deps.config.provisionTimeoutSeconds) {
    throw new ProvisionTimeoutError(`server not active after ${Math.round(elapsedSeconds())} s`);
  }
  return { ready: false, abandoned: false };
}

/** What a client may read about a failure (job error): never upstream or internal details. */
const failureTexts: Record<string, string> = {
  UpstreamPermanentError: 'The upstream refused to create the server',
  UpstreamTransientError: 'The upstream kept failing',
  ProvisionTimeoutError: 'The server did not become active in time',
};

/**
 * Undoes a failed provision: destroys every upstream server carrying the instance's tag, gives back the IPv4
 * address and tier capacity exactly once, and marks the instance and its job failed. Safe to retry.
 */
export async function compensateStep(deps: Deps, { instance_id, job_id, error }: CompensateInput): Promise<{ compensated: boolean }> {
  return { compensated: await failProvision(deps, instance_id, job_id, error?.Error) };
}

/**
 * Undoes a provision that cannot finish: destroys every upstream server carrying the instance's tag, gives back
 * its capacity exactly once, and marks the instance and its job failed. False when there was nothing to undo.
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
  await destroyTaggedServers(deps, instanceId);
  const finish = jobId
    ? {
        job_id: jobId,
        outcome: { status: 'failed' as const, error: failureTexts[errorName ?? ''] ?? 'Provisioning failed' },
        at: deps.clock.now().toISOString(),
      }
    : undefined;
  if (live) {
    await updateInstanceWithRetry(deps, instanceId, (current) =>
      current.deleted_at === null && PROVISIONING_STATUSES.includes(current.status)
        ? { changes: { status: 'failed', capacity_held: false, pending_plan: null }, release: heldPools(current), finish }
        : undefined,
    );
  }
  if (finish) await finishJob(deps, finish.job_id, finish.outcome, finish.at);
  return true;
}

/** Destroys every upstream server carrying the instance's tag; returns how many it found. */
export async function destroyTaggedServers(deps: Deps, instanceId: number): Promise<number> {
  const driver = await upstream(deps);
  const servers = await driver.listServersByTag(upstreamTagOf(deps, instanceId));
  await Promise.all(servers.map((server) => driver.deleteServer(server.id)));
  return servers.length;
}
