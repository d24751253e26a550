import { createVpsClient, InstanceFailedError, JobFailedError, TopUpFailedError, VpsApiError } from '../../clients/sdk/index';
import { useTestRuntime } from '../support/runtime';
import { ORDERABLE_FLAVORS } from '../fixtures/flavors';

const runtime = useTestRuntime();
const quickPolls = { initial: 50, max: 200 };

async function client() {
  const { apiKey } = await runtime.newAccount();
  return createVpsClient({ baseUrl: runtime.baseUrl, apiKey, pollIntervalMs: quickPolls });
}

describe('the SDK against the local service', () => {
  it('creates an instance and waits for it to be active, reporting each status once', async () => {
    const vps = await client();
    const seen: string[] = [];

    const created = await vps.createInstance({ project_name: 'sdk', flavor: 's-1vcpu-2gb' });
    const active = await vps.waitForInstance(created.instance_id, ['active'], { onStatus: (status) => seen.push(status) });

    expect(created.status).toBe('pending');
    expect(active).toMatchObject({
      instance_id: created.instance_id,
      status: 'active',
      ipv4: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/),
    });
    expect(seen.at(-1)).toBe('active');
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.every((status) => ['pending', 'provisioning', 'active'].includes(status))).toBe(true);
  });

  it('replays a create sent again with the same Idempotency-Key instead of deploying twice', async () => {
    const vps = await client();

    const first = await vps.createInstance({ project_name: 'once', flavor: 's-1vcpu-2gb' }, { idempotencyKey: 'sdk-once-1' });
    const again = await vps.createInstance({ project_name: 'once', flavor: 's-1vcpu-2gb' }, { idempotencyKey: 'sdk-once-1' });

    expect(again.instance_id).toBe(first.instance_id);
    await vps.waitForInstance(first.instance_id, ['active']);
    expect((await vps.listInstances()).map((instance) => instance.instance_id)).toEqual([first.instance_id]);
  });

  it('waitForJob throws JobFailedError with the failed job when the job fails', async () => {
    const vps = await client();
    const { instance_id: id } = await vps.createInstance({ project_name: 'doomed', flavor: 's-1vcpu-2gb' });
    await vps.waitForInstance(id, ['active']);

    const { job_id: jobId } = await vps.resize(id, 's-2vcpu-4gb');
    // The resize itself is sent by the workflow after the power-off, and the upstream refuses it for good.
    await runtime.simulator.control.faults({ fail_next: 1, status: 422, match: 'POST /v2/droplets/' });
    const error = await vps.waitForJob(jobId!).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(JobFailedError);
    expect((error as JobFailedError).job).toMatchObject({
      job_id: jobId,
      type: 'resize',
      instance_id: id,
      status: 'failed',
      error: expect.any(String),
    });
    expect((error as JobFailedError).message).toMatch(new RegExp(`^resize job ${jobId} failed: `));
  });

  it('waitForInstance throws InstanceFailedError when the instance ends failed', async () => {
    const vps = await client();
    await runtime.simulator.control.faults({ fail_creates: true });
    try {
      const { instance_id: id } = await vps.createInstance({ project_name: 'refused', flavor: 's-1vcpu-2gb' });
      const error = await vps.waitForInstance(id, ['active']).catch((caught: unknown) => caught);

      expect(error).toBeInstanceOf(InstanceFailedError);
      expect((error as InstanceFailedError).instance).toMatchObject({ instance_id: id, status: 'failed' });
    } finally {
      await runtime.simulator.control.faults({ fail_creates: false });
    }
  });

  it.each([
    {
      why: 'an unknown instance',
      call: (vps: Awaited<ReturnType<typeof client>>) => vps.getInstance(999_999),
      status: 404,
      text: 'Instance not found',
    },
    {
      why: 'a flavor that is not offered',
      call: (vps: Awaited<ReturnType<typeof client>>) => vps.createInstance({ project_name: 'x', flavor: 's-1vcpu-1gb' as never }),
      status: 400,
      text: 'Flavor s-1vcpu-1gb is permanently unavailable',
    },
  ])('surfaces $why as VpsApiError with status, text and request id', async ({ call, status, text }) => {
    const vps = await client();

    const error = await call(vps).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(VpsApiError);
    expect(error).toMatchObject({ status, error: text, requestId: expect.stringMatching(/\S/) });
  });

  it('lists the orderable flavors with their plans from the served document', async () => {
    const vps = await client();

    const flavors = await vps.flavors();

    expect(flavors.map((plan) => plan.flavor)).toEqual(ORDERABLE_FLAVORS);
    expect(flavors[0]).toEqual({ flavor: 's-1vcpu-2gb', vcpu: 1, ram_mb: 2048, disk_gb: 30, hourly_price: 0.01786 });
  });
});

describe('the SDK and money', () => {
  const provider = (path: string) => fetch(`${runtime.payments.url}/_sim/${path}`, { method: 'POST' });

  it('opens a top-up, waits until the payment is credited, and reads the balance', async () => {
    const vps = await client();

    const opened = await vps.createTopUp(25.5);
    const waiting = vps.waitForTopUp(opened.top_up_id);
    await provider(`sessions/${opened.provider_session_id}/pay`);
    const paid = await waiting;
    const billing = await vps.getBilling();

    expect(opened).toMatchObject({ status: 'open', amount_usd: '25.50', checkout_url: expect.stringContaining('/pay/cs_test_') });
    expect(paid).toMatchObject({ top_up_id: opened.top_up_id, status: 'paid' });
    expect(billing).toMatchObject({ balance_usd: '75.50', total_deposited_usd: '75.50', deposit_met: true });
  });

  it('throws TopUpFailedError, with the top-up, when its checkout expires unpaid', async () => {
    const vps = await client();
    const opened = await vps.createTopUp(10);

    const waiting = vps.waitForTopUp(opened.top_up_id).catch((error: unknown) => error);
    await provider(`sessions/${opened.provider_session_id}/expire`);
    const error = await waiting;

    expect(error).toBeInstanceOf(TopUpFailedError);
    expect((error as TopUpFailedError).topUp).toMatchObject({ top_up_id: opened.top_up_id, status: 'expired' });
  });

  it('refuses an amount below the least with the service text', async () => {
    const vps = await client();

    const error = await vps.createTopUp(4).catch((refused: unknown) => refused);

    expect(error).toBeInstanceOf(VpsApiError);
    expect(error).toMatchObject({ status: 400, error: 'amount_usd must be at least 5' });
  });
});
