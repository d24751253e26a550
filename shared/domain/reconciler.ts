import { countMetric, logger, metricNames } from '../observability';
import { getInstanceItem, getInstanceItems, scanInstancesByStatus, type InstanceItem } from '../store/instances';
import { finishJob, insertJob, listRunningJobs, listAllRunningJobs, type Job } from '../store/jobs';
import { upstream } from '../upstream';
import type { UpstreamServer } from '../upstream/driver';
import { settleAction } from './action-steps';
import { serviceTag } from './instances';
import { newJob } from './jobs';
import { workflowEngine } from '../workflows';
import { failProvision } from './provisioning';
import { orphanJobOutcome } from './convergence';
import { repairDrift, type DriftReport } from './drift';

export interface ReconcileReport {
  /** Deletes whose workflow had died, started again. */
  readonly deletesRestarted: number;
  /** Provisions whose workflow had died, failed with compensation. */
  readonly provisionsFailed: number;
  /** Actions whose workflow had died or handed over, settled to the upstream's state once it had ended. */
  readonly actionsSettled: number;
  /** Running jobs with no execution whose instance had moved on, ended. */
  readonly jobsEnded: number;
  /** Upstream servers of ours that are not a live instance's server (none, or a second one), destroyed. */
  readonly leakedServersDestroyed: number;
  /** Live instances whose record was made to follow their server, by kind. */
  readonly drift: DriftReport;
}

/** Left alone for this long after their last change, so that work just started is never taken for stuck. */
const GRACE_MS = 120_000;

type Repair = 'deletesRestarted' | 'provisionsFailed' | 'actionsSettled';

/** Repairs one instance whose lifecycle has no running workflow behind it; undefined when nothing was wrong. */
async function repair(instance: InstanceItem): Promise<Repair | undefined> {
  const running = await listRunningJobs(instance.instance_id);
  const owning = (types: Job['type'][]) => running.find((job) => types.includes(job.type));
  if (instance.status === 'deleting') {
    const job = owning(['delete']);
    if (job && (await workflowEngine().isRunning(job))) return undefined;
    if (job)
      await finishJob(
        job.job_id,
        { status: 'failed', error: 'The delete was interrupted; it has been restarted' },
        new Date().toISOString(),
      );
    const restart = newJob('delete', instance);
    await insertJob(restart);
    await workflowEngine().start('delete', restart, {});
    return 'deletesRestarted';
  }
  if (instance.status === 'pending' || instance.status === 'provisioning') {
    const job = owning(['provision']);
    if (job && (await workflowEngine().isRunning(job))) return undefined;
    await failProvision(instance.instance_id, job?.job_id, 'ProvisionAbandoned');
    return 'provisionsFailed';
  }
  if (instance.active_job_id !== null) {
    const job = running.find((candidate) => candidate.job_id === instance.active_job_id);
    if (job && (await workflowEngine().isRunning(job))) return undefined;
    // Settled only once the upstream's actions have ended; until then the instance keeps its transitional status.
    return (await settleAction(instance.instance_id, instance.active_job_id, 'ActionAbandoned')) ? 'actionsSettled' : undefined;
  }
  return undefined;
}

/** Whether the instance's own lifecycle still points at the job (then `repair` is what settles it). */
function ownedByInstance(job: Job, instance: InstanceItem | undefined): boolean {
  if (!instance) return false;
  if (job.type === 'delete') return instance.status === 'deleting';
  if (job.type === 'provision') return instance.status === 'pending' || instance.status === 'provisioning';
  return instance.active_job_id === job.job_id;
}

/** Ends running jobs that have no execution and that their instance no longer points at; returns how many. */
async function endOrphanJobs(now: number, graceMs: number): Promise<number> {
  let ended = 0;
  for (const job of await listAllRunningJobs()) {
    if (now - Date.parse(job.started_at) < graceMs) continue;
    try {
      const instance = await getInstanceItem(job.instance_id);
      if (ownedByInstance(job, instance) || (await workflowEngine().isRunning(job))) continue;
      await finishJob(job.job_id, orphanJobOutcome(job, instance), new Date().toISOString());
      ended += 1;
    } catch (error) {
      logger.error('could not end an orphaned job', { job_id: job.job_id, error });
    }
  }
  return ended;
}

/** Our tagged servers that are not a live instance's recorded server (none owns them, or a second one of one). */
export async function findLeakedServers(): Promise<{ server: UpstreamServer; instanceId: number | null }[]> {
  const instanceTag = new RegExp(`^${serviceTag()}-instance-(\\d+)$`);
  const instanceIdOf = (server: UpstreamServer) => {
    const id = Number(server.tags.map((tag) => instanceTag.exec(tag)?.[1]).find(Boolean));
    return Number.isSafeInteger(id) && id > 0 ? id : null;
  };
  const leaked = [];
  // Page by page, however many: each page's instances are read in batches, not one by one.
  for await (const servers of (await upstream()).serverPagesByTag(serviceTag())) {
    const ids = [...new Set(servers.map(instanceIdOf).filter((id): id is number => id !== null))];
    const instances = new Map((await getInstanceItems(ids)).map((instance) => [instance.instance_id, instance]));
    for (const server of servers) {
      const instanceId = instanceIdOf(server);
      const instance = instanceId === null ? undefined : instances.get(instanceId);
      // A deleting instance's own workflow destroys its server; a live instance keeps exactly its own server (one
      // still being created has none recorded yet); anything else is a leak.
      const live = instance && !['destroyed', 'failed'].includes(instance.status);
      if (live && (instance.status === 'deleting' || instance.upstream_id === null || instance.upstream_id === server.id)) continue;
      leaked.push({ server, instanceId });
    }
  }
  return leaked;
}

/** Destroys our tagged servers that are not a live instance's server; returns how many. */
async function destroyLeakedServers(): Promise<number> {
  const driver = await upstream();
  const leaked = await findLeakedServers();
  for (const { server, instanceId } of leaked) {
    logger.warn('destroying a leaked upstream server', { server_id: server.id, instance_id: instanceId });
    await driver.deleteServer(server.id);
  }
  return leaked.length;
}

/**
 * Finds lifecycles that stopped half-way (their workflow died or was never started) and finishes them safely,
 * then destroys upstream servers that belong to no live instance, so that a leak never costs anyone silently.
 */
export async function reconcile(now = Date.now(), graceMs = GRACE_MS): Promise<ReconcileReport> {
  const report = {
    deletesRestarted: 0,
    provisionsFailed: 0,
    actionsSettled: 0,
    jobsEnded: 0,
    leakedServersDestroyed: 0,
    drift: { vanished: 0, foreign: 0, power: 0, size: 0 },
  };
  const candidates = await scanInstancesByStatus(['pending', 'provisioning', 'resizing', 'deleting', 'active', 'stopped']);
  for (const instance of candidates) {
    const transitional = !['active', 'stopped'].includes(instance.status) || instance.active_job_id !== null;
    if (!transitional || now - Date.parse(instance.updated_at ?? instance.created_at ?? '') < graceMs) continue;
    try {
      const repaired = await repair(instance);
      if (repaired) report[repaired] += 1;
    } catch (error) {
      logger.error('could not reconcile an instance', { instance_id: instance.instance_id, error });
    }
  }
  report.jobsEnded = await endOrphanJobs(now, graceMs);
  report.drift = await repairDrift(now);
  report.leakedServersDestroyed = await destroyLeakedServers();
  logger.info('reconciled', { ...report });
  countMetric(metricNames.reconcilerRepairs, report.deletesRestarted + report.provisionsFailed + report.actionsSettled + report.jobsEnded);
  countMetric(metricNames.leakedServersDestroyed, report.leakedServersDestroyed);
  return report;
}
