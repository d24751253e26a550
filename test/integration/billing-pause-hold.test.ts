import { charge, deposit } from '../../shared/domain/billing';
import { getInstanceItem } from '../../shared/store/instances';
import { useTestRuntime } from '../support/runtime';

/** The billing pause holds for work that finishes during it: no server is left running on a paused account. */
const runtime = useTestRuntime();

const action = (apiKey: string, id: number, body: unknown) => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });
const droplet = (id: number) => runtime.simulator.state().droplets.find((d) => d.id === id);
/** Takes the account below zero: it is billing-paused, and what runs now is powered off. */
const spendAll = (accountId: string) => charge(runtime.deps, accountId, 100_000_000, 'usage');

/** A stopped instance whose power-on has been accepted and takes two seconds upstream. */
async function powerOnUnderWay() {
  const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '10' });
  const detail = await runtime.activeInstance(apiKey);
  const off = await action(apiKey, detail.instance_id, { type: 'power_off' });
  await runtime.waitForJob(apiKey, off.body.job_id);
  await runtime.simulator.control.config({ action_ms: 2_000 });
  const on = await action(apiKey, detail.instance_id, { type: 'power_on' });
  return { apiKey, accountId, detail, on };
}

afterEach(() => runtime.simulator.control.config({ boot_ms: 300, action_ms: 300 }));

describe('the billing pause', () => {
  it('powers off a server whose provision finishes after the account was paused', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '10' });
    await runtime.simulator.control.config({ boot_ms: 2_000 });
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'late', flavor: 's-1vcpu-2gb' } });
    await runtime.waitForStatus(apiKey, created.body.instance_id, ['provisioning'], 10_000);

    await spendAll(accountId);
    const stopped = await runtime.waitForStatus(apiKey, created.body.instance_id, ['stopped'], 30_000);
    await runtime.stepFunctions.idle();

    expect(stopped.status).toBe('stopped');
    expect(await getInstanceItem(runtime.deps, created.body.instance_id)).toMatchObject({
      status: 'stopped',
      paused_by: 'billing',
      active_job_id: null,
    });
    expect(droplet(Number(stopped.vps_id))?.status).toBe('off');
  });

  it('powers a server off again when its power-on finishes after the account was paused, in the same job', async () => {
    const { apiKey, accountId, detail, on } = await powerOnUnderWay();

    await spendAll(accountId);
    const job = await runtime.waitForJob(apiKey, on.body.job_id, 30_000);

    expect(on.status).toBe(200);
    expect(job.status).toBe('succeeded');
    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({
      status: 'stopped',
      paused_by: 'billing',
      active_job_id: null,
    });
    expect(droplet(Number(detail.vps_id))?.status).toBe('off');
  });

  it('powers off a running server whose resize finishes after the account was paused', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '10' });
    const detail = await runtime.activeInstance(apiKey);
    await runtime.simulator.control.config({ action_ms: 1_500 });
    const resize = await action(apiKey, detail.instance_id, { type: 'resize', flavor: 's-2vcpu-4gb' });

    await spendAll(accountId);
    await runtime.waitForJob(apiKey, resize.body.job_id, 60_000);
    const stopped = await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped'], 30_000);
    await runtime.stepFunctions.idle();

    expect(stopped.plan).toMatchObject({ flavor: 's-2vcpu-4gb' });
    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({
      status: 'stopped',
      paused_by: 'billing',
      active_job_id: null,
    });
    expect(droplet(Number(detail.vps_id))?.status).toBe('off');
  });

  it('leaves a server running when the account pays again before its power-on finishes', async () => {
    const { apiKey, accountId, detail, on } = await powerOnUnderWay();

    await spendAll(accountId);
    await deposit(runtime.deps, accountId, 200_000_000);
    await runtime.waitForJob(apiKey, on.body.job_id, 30_000);

    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({ status: 'active', paused_by: null });
    expect(droplet(Number(detail.vps_id))?.status).toBe('active');
  });
});
