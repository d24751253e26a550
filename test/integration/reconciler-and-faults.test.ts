import { serviceTag, upstreamTagOf } from '../../shared/domain/instances';
import { reconcile } from '../../shared/domain/reconciler';
import { upstream } from '../../shared/domain/upstream';
import { getInstanceItem, insertInstanceReservingCapacity, updateInstanceAtVersion } from '../../shared/store/instances';
import { nextSequenceValue, setCapacityLimit } from '../../shared/store/counters';
import { getJob } from '../../shared/store/jobs';
import { newJob } from '../../shared/domain/jobs';
import { capacityCounters, capacityHeldByInstances } from '../support/capacity';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const later = () => Date.now() + 10 * 60_000;
const action = (apiKey: string, id: number, body: unknown) => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });
const serversOf = (instanceId: number) =>
  runtime.simulator.state().droplets.filter((d) => d.tags.includes(upstreamTagOf(runtime.deps, instanceId)));

/** A job recorded as running whose workflow never started (as after a crash between the two). */
const orphanJob = newJob;

describe('reconciler', () => {
  it('powers off servers tagged for this stage that no live instance owns, and destroys them after the grace period', async () => {
    const driver = await upstream(runtime.deps);
    const orphan = await driver.createServer({
      name: 'vps-999999',
      tags: [upstreamTagOf(runtime.deps, 999_999), serviceTag(runtime.deps)],
      size: 's-1vcpu-2gb',
      image: 'ubuntu-24-04-x64',
      userData: '',
    });
    const foreign = await driver.createServer({
      name: 'not-ours',
      tags: ['someone-else'],
      size: 's-1vcpu-2gb',
      image: 'ubuntu-24-04-x64',
      userData: '',
    });
    const otherStage = await driver.createServer({
      name: 'vps-999998',
      tags: ['vps-prod-instance-999998', 'vps-prod'],
      size: 's-1vcpu-2gb',
      image: 'ubuntu-24-04-x64',
      userData: '',
    });

    const found = await reconcile(runtime.deps, later());
    const waiting = await driver.getServer(orphan.id);
    const report = await reconcile(runtime.deps, later() + 7 * 3_600_000);

    expect([found.orphansFound, found.leakedServersDestroyed]).toEqual([1, 0]);
    expect(waiting).not.toBeNull();
    expect(report.leakedServersDestroyed).toBe(1);
    expect(await driver.getServer(orphan.id)).toBeNull();
    expect(await driver.getServer(foreign.id)).not.toBeNull();
    expect(await driver.getServer(otherStage.id)).not.toBeNull();
  });

  it('restarts a delete whose workflow never ran, and the instance ends destroyed with nothing held', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const instance = (await getInstanceItem(runtime.deps, detail.instance_id))!;
    const job = orphanJob('delete', instance);
    await updateInstanceAtVersion(runtime.deps, instance, { changes: { status: 'deleting', deleted_at: new Date().toISOString() }, job });

    const report = await reconcile(runtime.deps, later());
    await runtime.stepFunctions.idle();

    expect(report.deletesRestarted).toBe(1);
    expect((await getInstanceItem(runtime.deps, detail.instance_id))?.status).toBe('destroyed');
    expect(serversOf(detail.instance_id)).toEqual([]);
    expect((await getJob(runtime.deps, job.job_id))?.status).toBe('failed');
  });

  it('settles an action whose workflow died to what the upstream reports, its job succeeded when the upstream shows it done', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const instance = (await getInstanceItem(runtime.deps, detail.instance_id))!;
    const job = orphanJob('power_off', instance);
    await updateInstanceAtVersion(runtime.deps, instance, { changes: { active_job_id: job.job_id }, job });
    await runtime.simulator.control.powerOff(Number(detail.vps_id));

    const report = await reconcile(runtime.deps, later());

    expect(report.actionsSettled).toBe(1);
    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({
      status: 'stopped',
      active_job_id: null,
      paused_by: 'user',
    });
    expect(await getJob(runtime.deps, job.job_id)).toMatchObject({ status: 'succeeded', failure: null });
  });

  it('fails an action whose workflow died before the upstream took it, saying it was interrupted', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const instance = (await getInstanceItem(runtime.deps, detail.instance_id))!;
    const job = orphanJob('reboot', instance);
    await updateInstanceAtVersion(runtime.deps, instance, { changes: { active_job_id: job.job_id }, job });

    const report = await reconcile(runtime.deps, later());

    expect(report.actionsSettled).toBe(1);
    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({ status: 'active', active_job_id: null });
    expect(await getJob(runtime.deps, job.job_id)).toMatchObject({
      status: 'failed',
      failure: {
        code: 'interrupted',
        message: 'The action was interrupted before it took effect; the instance shows what the upstream reports',
      },
    });
  });

  it('fails a provision whose workflow ended without settling it, releasing its capacity', async () => {
    const { apiKey } = await runtime.newAccount();
    const template = (await getInstanceItem(runtime.deps, (await runtime.activeInstance(apiKey)).instance_id))!;
    const instanceId = await nextSequenceValue(runtime.deps, 'instance_id');
    const job = orphanJob('provision', { ...template, instance_id: instanceId });
    await insertInstanceReservingCapacity(
      runtime.deps,
      {
        ...template,
        instance_id: instanceId,
        status: 'pending',
        vps_id: '',
        upstream_id: null,
        ipv4: null,
        activated_at: null,
        capacity_held: true,
        version: 1,
      },
      job,
    );
    // An execution under the job's name that ends at once, its input naming no instance.
    runtime.stepFunctions.start('provision', { instance_id: 999_999_999, job_id: job.job_id }, job.job_id);
    await runtime.stepFunctions.idle();

    const report = await reconcile(runtime.deps, later());

    expect(report.provisionsFailed).toBe(1);
    const interrupted = {
      code: 'interrupted',
      message: 'Provisioning was interrupted before the server was ready; its server, if any, was destroyed',
    };
    expect(await getInstanceItem(runtime.deps, instanceId)).toMatchObject({ status: 'failed', capacity_held: false, failure: interrupted });
    expect(await getJob(runtime.deps, job.job_id)).toMatchObject({ status: 'failed', failure: interrupted });
    expect(await capacityCounters(runtime.deps)).toEqual(await capacityHeldByInstances(runtime.deps));
  });

  it('leaves lifecycles whose workflow is running alone', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.simulator.control.config({ boot_ms: 3_000 });
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'busy', flavor: 's-1vcpu-2gb' } });
    await runtime.simulator.control.config({ boot_ms: 300 });

    const report = await reconcile(runtime.deps, later());

    expect(report.provisionsFailed).toBe(0);
    expect((await runtime.waitForStatus(apiKey, created.body.instance_id, ['active', 'failed'])).status).toBe('active');
  });
});

describe('faults', () => {
  it('retries bursts of upstream 429 and 5xx during actions and deletes, and still completes them', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey, 's-1vcpu-2gb');

    await runtime.simulator.control.faults({ fail_next: 2, status: 429, match: 'POST /v2/droplets/' });
    const resize = await action(apiKey, detail.instance_id, { type: 'resize', flavor: 's-2vcpu-4gb' });
    await runtime.simulator.control.faults({ fail_next: 3, status: 429, match: 'GET /v2/actions/' });
    const resized = await runtime.waitForJob(apiKey, resize.body.job_id);
    await runtime.simulator.control.faults({ fail_next: 3, status: 500, match: 'DELETE /v2/droplets/' });
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${detail.instance_id}`, { apiKey });
    const deleteJob = await runtime.waitForJob(apiKey, deleted.body.job_id);

    expect(resize.status).toBe(200);
    expect(resized.status).toBe('succeeded');
    expect(deleteJob.status).toBe('succeeded');
    expect(serversOf(detail.instance_id)).toEqual([]);
  });

  it('keeps every capacity counter equal to what live instances hold across create, failure, resize and delete', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '100' });
    const kept = await runtime.activeInstance(apiKey, 's-1vcpu-2gb');
    const resized = await runtime.activeInstance(apiKey, 's-2vcpu-2gb');
    const removed = await runtime.activeInstance(apiKey, 's-4vcpu-8gb');
    await runtime.simulator.control.faults({ fail_creates: true });
    const doomed = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'doomed', flavor: 's-8vcpu-16gb' } });
    await runtime.waitForStatus(apiKey, doomed.body.instance_id, ['failed']);
    await runtime.simulator.control.faults({ fail_creates: false });

    const resize = await action(apiKey, resized.instance_id, { type: 'resize', flavor: 's-4vcpu-8gb' });
    await runtime.waitForJob(apiKey, resize.body.job_id);
    await setCapacityLimit(runtime.deps, { kind: 'tier', flavor: 's-16vcpu-32gb' }, 0);
    const refusedResize = await action(apiKey, kept.instance_id, { type: 'resize', flavor: 's-16vcpu-32gb' });
    await setCapacityLimit(runtime.deps, { kind: 'tier', flavor: 's-16vcpu-32gb' }, 1000);
    await runtime.simulator.control.faults({ fail_next: 1, status: 422, match: 'POST /v2/droplets/' });
    const upstreamRefused = await action(apiKey, kept.instance_id, { type: 'resize', flavor: 's-2vcpu-4gb' });
    const deleted = await runtime.call('DELETE', `/api/v1/instances/${removed.instance_id}`, { apiKey });
    await runtime.waitForJob(apiKey, deleted.body.job_id);
    await runtime.stepFunctions.idle();

    expect(refusedResize.status).toBe(503);
    expect(upstreamRefused.status).toBe(502);
    expect(await capacityCounters(runtime.deps)).toEqual(await capacityHeldByInstances(runtime.deps));
    expect(runtime.simulator.state().droplets.every((d) => !d.tags.includes(upstreamTagOf(runtime.deps, doomed.body.instance_id)))).toBe(
      true,
    );
  });
});
