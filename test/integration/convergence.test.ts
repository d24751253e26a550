import { reconcile } from '../../shared/domain/reconciler';
import { getInstanceItem, updateInstanceAtVersion } from '../../shared/store/instances';
import { getJob, insertJob } from '../../shared/store/jobs';
import { newJob } from '../../shared/domain/jobs';
import { upstream } from '../../shared/domain/upstream';
import { powerOffForBilling } from '../../shared/domain/lifecycle';
import { setBillingState } from '../support/accounts';
import { useTestRuntime } from '../support/runtime';
import { capacityUsed } from '../support/capacity';

/**
 * Records converge to what the upstream really did, under the faults that make its answers ambiguous: a start call
 * that times out after the upstream carried it out, status reads that fail while the action runs on, a process that
 * dies between two writes.
 */
const runtime = useTestRuntime({
  env: { UPSTREAM_REQUEST_TIMEOUT_MS: '1000', UNKNOWN_OUTCOME_WINDOW_SECONDS: '4' },
});

const action = (apiKey: string, id: number, body: unknown) => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });
const serverOf = (vpsId: string) => runtime.simulator.state().droplets.find((d) => d.id === Number(vpsId));
const later = () => Date.now() + 10 * 60_000;

async function stoppedInstance(apiKey: string, flavor = 's-1vcpu-2gb') {
  const instance = await runtime.activeInstance(apiKey, flavor);
  const off = await action(apiKey, instance.instance_id, { type: 'power_off' });
  await runtime.waitForJob(apiKey, off.body.job_id);
  return instance;
}

describe('an action start whose answer is lost', () => {
  afterEach(async () => {
    await runtime.simulator.control.faults({ latency_ms: 0, fail_next: 0 });
  });

  it.each([
    { type: 'power_off', from: 'active', to: 'stopped', server: 'off' },
    { type: 'power_on', from: 'stopped', to: 'active', server: 'active' },
  ])(
    'answers 200 for $type carried out after the call timed out, and the record follows the server',
    async ({ type, from, to, server }) => {
      const { apiKey } = await runtime.newAccount();
      const instance = from === 'active' ? await runtime.activeInstance(apiKey) : await stoppedInstance(apiKey);
      await runtime.simulator.control.faults({ latency_ms: 1_500, latency_match: 'POST /v2/droplets/' });

      const response = await action(apiKey, instance.instance_id, { type });
      const job = await runtime.waitForJob(apiKey, response.body.job_id);

      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ok: true, action: type, job_id: expect.any(String) });
      expect(job).toMatchObject({ status: 'succeeded', error: null });
      expect(serverOf(instance.vps_id)?.status).toBe(server);
      expect((await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey })).body.status).toBe(to);
    },
  );

  it('resizes a stopped instance whose resize call timed out but was carried out: new plan, tiers swapped', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await stoppedInstance(apiKey, 's-1vcpu-2gb');
    const smallBefore = await capacityUsed(runtime.deps, 'capacity#tier#s-1vcpu-2gb');
    const largeBefore = await capacityUsed(runtime.deps, 'capacity#tier#s-2vcpu-4gb');
    await runtime.simulator.control.faults({ latency_ms: 1_500, latency_match: 'POST /v2/droplets/' });

    const response = await action(apiKey, instance.instance_id, { type: 'resize', flavor: 's-2vcpu-4gb' });
    const job = await runtime.waitForJob(apiKey, response.body.job_id);
    const after = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });

    expect(response.status).toBe(200);
    expect(job.status).toBe('succeeded');
    expect([after.body.status, after.body.plan.flavor]).toEqual(['stopped', 's-2vcpu-4gb']);
    expect(serverOf(instance.vps_id)?.sizeSlug).toBe('s-2vcpu-4gb');
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-1vcpu-2gb')).toBe(smallBefore - 1);
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-2vcpu-4gb')).toBe(largeBefore + 1);
  });

  it('answers 200 for a start that failed with a 503, and the job fails once the action never appears', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);
    await runtime.simulator.control.faults({ fail_next: 1, status: 503, match: 'POST /v2/droplets/' });

    const response = await action(apiKey, instance.instance_id, { type: 'power_off' });
    const job = await runtime.waitForJob(apiKey, response.body.job_id);
    const calls = runtime.simulator.state().calls;

    expect(response.status).toBe(200);
    expect(job).toMatchObject({ status: 'failed', error: 'The upstream did not carry out the action' });
    expect(serverOf(instance.vps_id)?.status).toBe('active');
    expect((await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey })).body.status).toBe('active');
    expect(calls['GET /v2/droplets/{id}/actions']).toBeGreaterThan(0);
  });
});

describe('status checks that fail while the upstream action runs on', () => {
  it('keeps checking and settles from the finished action: the resize ends on the new plan', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await stoppedInstance(apiKey, 's-1vcpu-2gb');
    await runtime.simulator.control.config({ action_ms: 2_000 });

    const response = await action(apiKey, instance.instance_id, { type: 'resize', flavor: 's-2vcpu-4gb' });
    await runtime.simulator.control.faults({ fail_next: 40, status: 503, match: 'GET /v2/actions' });
    const job = await runtime.waitForJob(apiKey, response.body.job_id);
    await runtime.simulator.control.config({ action_ms: 75 });
    const after = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });

    expect(job.status).toBe('succeeded');
    expect(after.body.plan.flavor).toBe('s-2vcpu-4gb');
    expect(serverOf(instance.vps_id)?.sizeSlug).toBe('s-2vcpu-4gb');
  });
});

describe('no job runs forever', () => {
  it('ends a provision job left running after its instance became active as succeeded', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const job = newJob('provision', (await getInstanceItem(runtime.deps, detail.instance_id))!);
    await insertJob(runtime.deps, job);

    const report = await reconcile(runtime.deps, later());

    expect(report.jobsEnded).toBeGreaterThanOrEqual(1);
    expect(await getJob(runtime.deps, job.job_id)).toMatchObject({ status: 'succeeded', finished_at: expect.any(String) });
  });

  it('ends an action job its instance no longer points at as failed, and leaves the instance as it is', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const job = newJob('reboot', (await getInstanceItem(runtime.deps, detail.instance_id))!);
    await insertJob(runtime.deps, job);

    await reconcile(runtime.deps, later());

    expect(await getJob(runtime.deps, job.job_id)).toMatchObject({
      status: 'failed',
      error: 'The job was interrupted; the instance was settled to what the upstream reports',
    });
    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({ status: 'active', active_job_id: null });
  });

  it('leaves an abandoned action alone while its upstream action runs, then settles it once ended', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const instance = (await getInstanceItem(runtime.deps, detail.instance_id))!;
    const job = newJob('power_off', instance);
    await updateInstanceAtVersion(runtime.deps, instance, { changes: { active_job_id: job.job_id }, job });
    await runtime.simulator.control.config({ action_ms: 1_500 });
    await (await upstream(runtime.deps)).startAction(Number(detail.vps_id), { type: 'shutdown' });
    await runtime.simulator.control.config({ action_ms: 75 });

    const whileRunning = await reconcile(runtime.deps, later());
    const transitional = await getInstanceItem(runtime.deps, detail.instance_id);
    const jobWhileRunning = await getJob(runtime.deps, job.job_id);
    await vi.waitUntil(() => serverOf(detail.vps_id)?.status === 'off', { timeout: 10_000, interval: 100 });
    const onceEnded = await reconcile(runtime.deps, later());

    expect(whileRunning.actionsSettled).toBe(0);
    expect(transitional).toMatchObject({ status: 'active', active_job_id: job.job_id });
    expect(jobWhileRunning?.status).toBe('running');
    expect(onceEnded.actionsSettled).toBe(1);
    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({
      status: 'stopped',
      active_job_id: null,
      paused_by: 'user',
    });
    // The server is off: the power-off took effect, and its job says so.
    expect((await getJob(runtime.deps, job.job_id))?.status).toBe('succeeded');
  });
});

describe('the billing pause', () => {
  it.each([
    { paused: false, expected: { job: false, status: 'active', server: 'active' } },
    { paused: true, expected: { job: true, status: 'stopped', server: 'off' } },
  ])('powers a server off only while the account is still paused (paused: $paused)', async ({ paused, expected }) => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    // Decided while paused; a deposit may have lifted the pause since.
    const decidedOn = (await getInstanceItem(runtime.deps, detail.instance_id))!;
    await setBillingState(
      runtime.deps,
      accountId,
      paused ? { billing_paused: true, balance: 0 } : { billing_paused: false, balance: 1_000_000 },
    );

    const job = await powerOffForBilling(runtime.deps, decidedOn);
    if (job) await runtime.waitForJob(apiKey, job.job_id);

    expect(job !== undefined).toBe(expected.job);
    expect((await getInstanceItem(runtime.deps, detail.instance_id))?.status).toBe(expected.status);
    expect(serverOf(detail.vps_id)?.status).toBe(expected.server);
  });
});
