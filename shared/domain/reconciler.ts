import { failedWith } from '../model/job';
import { failure } from '../model/failure';
import type { Deps } from './deps';
import { metricNames } from '../metric-names';
import { countMetric, logger } from '../observability';
import { getInstanceItem, listInFlightInstances } from '../store/instances';
import { type Instance } from '../model/instance';
import { finishJob, insertJob, listRunningJobs, listAllRunningJobs } from '../store/jobs';
import { type Job } from '../model/job';
import { readOrphanBook } from '../store/orphans';
import { upstream } from './upstream';
import type { UpstreamServer } from '../model/server';
import { settleAction } from './action-steps';
import { serviceTag } from './instances';
import { newJob } from './jobs';
import { failProvision } from './provisioning';
import { orphanJobOutcome } from '../model/convergence';
import { isLeaked, sweepFleet, withInstances, type DriftReport } from './fleet-sweep';

export interface ReconcileReport {
  /** Deletes whose workflow had died, started again. */
  readonly deletesRestarted: number;
  /** Provisions whose workflow had never started (the create could not start it), started. */
  readonly provisionsStarted: number;
  /** Provisions whose workflow had ended without settling them, failed with compensation. */
  readonly provisionsFailed: number;
  /** Actions whose workflow had died or handed over, settled to the upstream's state once it had ended. */
  readonly actionsSettled: number;
  /** Running jobs with no execution whose instance had moved on, ended. */
  readonly jobsEnded: number;
  /** Orphaned servers of ours (no live instance owns them) destroyed, each after its grace period. */
  readonly leakedServersDestroyed: number;
  /** Servers newly found orphaned: powered off, destroyed only after the grace period. */
  readonly orphansFound: number;
  /** Instances lost by inference whose server was found again, restored from it. */
  readonly serversReadopted: number;
  /** Servers a read by id did not find, recorded as evidence of absence (a suspicion, not a loss). */
  readonly absencesSuspected: number;
  /** Whether the sweep's blast-radius guard holds its power-offs and destructions until an operator resumes them. */
  readonly sweepGuardHalted: boolean;
  /** Live instances whose record was made to follow their server, by kind. */
  readonly drift: DriftReport;
}

/** Left alone for this long after their last change, so that work just started is never taken for stuck. */
const GRACE_MS = 120_000;

type Repair = 'deletesRestarted' | 'provisionsStarted' | 'provisionsFailed' | 'actionsSettled';

/** Repairs one instance whose lifecycle has no running workflow behind it; undefined when nothing was wrong. */
async function repair(deps: Deps, instance: Instance): Promise<Repair | undefined> {
  const running = await listRunningJobs(deps, instance.instance_id);
  const owning = (types: Job['type'][]) => running.find((job) => types.includes(job.type));
  const isRunning = async (job: Job | undefined) => job !== undefined && (await deps.workflows.execution(job)) === 'running';
  if (instance.status === 'deleting') {
    const job = owning(['delete']);
    if (await isRunning(job)) return undefined;
    if (job)
      await finishJob(
        deps,
        job.job_id,
        failedWith(failure('interrupted', 'The delete was interrupted; it has been restarted')),
        deps.clock.now().toISOString(),
      );
    const restart = newJob('delete', instance);
    await insertJob(deps, restart);
    await deps.workflows.start('delete', restart, {});
    return 'deletesRestarted';
  }
  if (instance.status === 'pending' || instance.status === 'provisioning') {
    const job = owning(['provision']);
    const execution = job && (await deps.workflows.execution(job));
    if (execution === 'running') return undefined;
    if (job && execution === 'absent') {
      // Committed, but its create could not start the workflow: it starts now, under the job's name, so a start that
      // did happen after all is not doubled.
      await deps.workflows.start('provision', job, {});
      return 'provisionsStarted';
    }
    await failProvision(deps, instance.instance_id, job?.job_id, 'ProvisionAbandoned');
    return 'provisionsFailed';
  }
  if (instance.active_job_id !== null) {
    const job = running.find((candidate) => candidate.job_id === instance.active_job_id);
    if (await isRunning(job)) return undefined;
    // Settled only once the upstream's actions have ended; until then the instance keeps its transitional status.
    return (await settleAction(deps, instance.instance_id, instance.active_job_id, 'ActionAbandoned')) ? 'actionsSettled' : undefined;
  }
  return undefined;
}

/** Whether the instance's own lifecycle still points at the job (then `repair` is what settles it). */
function ownedByInstance(job: Job, instance: Instance | undefined): boolean {
  if (!instance) return false;
  if (job.type === 'delete') return instance.status === 'deleting';
  if (job.type === 'provision') return instance.status === 'pending' || instance.status === 'provisioning';
  return instance.active_job_id === job.job_id;
}

/** Ends running jobs that have no execution and that their instance no longer points at; returns how many. */
async function endOrphanJobs(deps: Deps, now: number, graceMs: number): Promise<number> {
  let ended = 0;
  for (const job of await listAllRunningJobs(deps)) {
    if (now - Date.parse(job.started_at) < graceMs) continue;
    try {
      const instance = await getInstanceItem(deps, job.instance_id);
      if (ownedByInstance(job, instance) || (await deps.workflows.execution(job)) === 'running') continue;
      await finishJob(deps, job.job_id, orphanJobOutcome(job, instance), deps.clock.now().toISOString());
      ended += 1;
    } catch (error) {
      logger.error('could not end an orphaned job', { job_id: job.job_id, error });
    }
  }
  return ended;
}

/**
 * Our tagged servers that no live instance owns and that the sweep has not taken in hand yet (orphans it has not
 * found, lost instances' servers to restore), for an audit: orphans already waiting out their grace are not drift.
 */
export async function findLeakedServers(deps: Deps): Promise<{ server: UpstreamServer; instanceId: number | null }[]> {
  const { orphans } = await readOrphanBook(deps);
  const leaked = [];
  for await (const servers of (await upstream(deps)).serverPagesByTag(serviceTag(deps)))
    for (const { server, instanceId, instance } of await withInstances(deps, servers))
      if (isLeaked(server, instance) && !orphans.has(server.id)) leaked.push({ server, instanceId });
  return leaked;
}

/**
 * Finds lifecycles that stopped half-way (their workflow died or was never started) and finishes them safely,
 * then sweeps the fleet: servers that belong to no live instance are powered off and, after a grace period, destroyed,
 * so that a leak never costs anyone silently and nothing a customer may own is destroyed on one observation.
 */
export async function reconcile(deps: Deps, now = deps.clock.now().getTime(), graceMs = GRACE_MS): Promise<ReconcileReport> {
  const report = {
    deletesRestarted: 0,
    provisionsStarted: 0,
    provisionsFailed: 0,
    actionsSettled: 0,
    jobsEnded: 0,
    leakedServersDestroyed: 0,
    orphansFound: 0,
    serversReadopted: 0,
    absencesSuspected: 0,
    sweepGuardHalted: false,
    drift: { vanished: 0, foreign: 0, power: 0, size: 0 },
  };
  for (const instance of await listInFlightInstances(deps)) {
    if (now - Date.parse(instance.updated_at ?? instance.created_at ?? '') < graceMs) continue;
    try {
      const repaired = await repair(deps, instance);
      if (repaired) report[repaired] += 1;
    } catch (error) {
      logger.error('could not reconcile an instance', { instance_id: instance.instance_id, error });
    }
  }
  report.jobsEnded = await endOrphanJobs(deps, now, graceMs);
  const sweep = await sweepFleet(deps, now);
  report.drift = sweep.drift;
  report.leakedServersDestroyed = sweep.leakedServersDestroyed;
  report.orphansFound = sweep.orphansFound;
  report.serversReadopted = sweep.readopted;
  report.absencesSuspected = sweep.absencesSuspected;
  report.sweepGuardHalted = sweep.guardHalted;
  logger.info('reconciled', { ...report, sweep_pages: sweep.pages, sweep_pass_completed: sweep.passCompleted });
  countMetric(
    metricNames.reconcilerRepairs,
    report.deletesRestarted + report.provisionsStarted + report.provisionsFailed + report.actionsSettled + report.jobsEnded,
  );
  return report;
}
