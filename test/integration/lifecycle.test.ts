import { upstreamTagOf } from '../../shared/domain/instances';
import { getInstanceItem, transitionInstance } from '../../shared/store/instances';
import { setCapacityLimit } from '../../shared/store/counters';
import { setBillingState } from '../support/accounts';
import { capacityUsed } from '../support/capacity';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const action = (apiKey: string, id: number, body: unknown) => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });

describe('POST /api/v1/instances/{instance_id}/actions', () => {
  it('powers off, then on, then reboots, with the status following each job', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);

    const off = await action(apiKey, instance.instance_id, { type: 'power_off' });
    expect(off.status).toBe(200);
    expect(off.body).toEqual({ ok: true, action: 'power_off', job_id: expect.any(String) });
    expect(await runtime.waitForJob(apiKey, off.body.job_id)).toMatchObject({ status: 'succeeded', type: 'power_off' });
    expect((await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey })).body.status).toBe('stopped');

    const offAgain = await action(apiKey, instance.instance_id, { type: 'power_off' });
    expect(offAgain.body).toEqual({ ok: true, action: 'power_off', job_id: null });

    const on = await action(apiKey, instance.instance_id, { type: 'power_on' });
    expect(await runtime.waitForJob(apiKey, on.body.job_id)).toMatchObject({ status: 'succeeded' });
    const reboot = await action(apiKey, instance.instance_id, { type: 'reboot' });
    expect(await runtime.waitForJob(apiKey, reboot.body.job_id)).toMatchObject({ status: 'succeeded', type: 'reboot' });
    expect((await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey })).body.status).toBe('active');
  });

  it.each([
    { from: 'active', powerOffFirst: false },
    { from: 'stopped', powerOffFirst: true },
  ])('resizes an instance that is $from, restores its power state and swaps tier capacity', async ({ from, powerOffFirst }) => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey, 's-1vcpu-2gb');
    if (powerOffFirst) {
      const off = await action(apiKey, instance.instance_id, { type: 'power_off' });
      await runtime.waitForJob(apiKey, off.body.job_id);
    }
    const smallBefore = await capacityUsed(runtime.deps, 'capacity#tier#s-1vcpu-2gb');
    const largeBefore = await capacityUsed(runtime.deps, 'capacity#tier#s-2vcpu-4gb');

    // Slow upstream actions, so that the resize is surely still running when its status is read.
    await runtime.simulator.control.config({ action_ms: 1_000 });
    const resize = await action(apiKey, instance.instance_id, { type: 'resize', flavor: 's-2vcpu-4gb' });
    const during = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });
    await runtime.simulator.control.config({ action_ms: 75 });
    const job = await runtime.waitForJob(apiKey, resize.body.job_id);
    const after = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });

    expect(resize.body).toEqual({ ok: true, action: 'resize', job_id: expect.any(String) });
    expect(during.body.status).toBe('resizing');
    expect(job.status).toBe('succeeded');
    expect(after.body.status).toBe(from);
    expect(after.body.plan).toEqual({ flavor: 's-2vcpu-4gb', vcpu: 2, ram_mb: 4096, disk_gb: 40, hourly_price: 0.03571 });
    expect(runtime.simulator.state().droplets.find((d) => d.id === Number(instance.vps_id))?.sizeSlug).toBe('s-2vcpu-4gb');
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-1vcpu-2gb')).toBe(smallBefore - 1);
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-2vcpu-4gb')).toBe(largeBefore + 1);
  });

  describe('errors, in the order of checks', () => {
    it.each([
      { body: { type: 'explode' }, text: 'Invalid action type' },
      { body: {}, text: 'Invalid action type' },
      { body: { type: 'resize' }, text: 'flavor is required for resize' },
      { body: { type: 'resize', flavor: 's-3vcpu' }, text: 'Invalid flavor: s-3vcpu' },
      { body: { type: 'resize', flavor: 's-1vcpu-1gb' }, text: 'Flavor s-1vcpu-1gb is permanently unavailable' },
      { body: { type: 'reboot', flavor: 's-2vcpu-4gb' }, text: 'flavor applies only to resize' },
      { body: { type: 'reboot', force: true }, text: 'Unknown field: force' },
    ])('answers 400 "$text" for $body, before looking the instance up', async ({ body, text }) => {
      const { apiKey } = await runtime.newAccount();

      const response = await action(apiKey, 999_999, body);

      expect(response.status).toBe(400);
      expect(response.body.error).toBe(text);
    });

    it('answers 400 for the resize rules: same flavor, smaller disk', async () => {
      const { apiKey } = await runtime.newAccount();
      const instance = await runtime.activeInstance(apiKey, 's-2vcpu-2gb');

      const same = await action(apiKey, instance.instance_id, { type: 'resize', flavor: 's-2vcpu-2gb' });
      const smaller = await action(apiKey, instance.instance_id, { type: 'resize', flavor: 's-1vcpu-2gb' });

      expect([same.status, same.body.error]).toEqual([400, 'Already on this flavor']);
      expect([smaller.status, smaller.body.error]).toEqual([400, 'Cannot downgrade disk size']);
    });

    it('returns 404 when the instance belongs to another account', async () => {
      const owner = await runtime.newAccount();
      const stranger = await runtime.newAccount();
      const instance = await runtime.activeInstance(owner.apiKey);

      const response = await action(stranger.apiKey, instance.instance_id, { type: 'power_off' });

      expect([response.status, response.body.error]).toEqual([404, 'Instance not found']);
    });

    it('answers 403 while billing-paused for power_on, reboot and resize, but still allows power_off', async () => {
      const { apiKey, accountId } = await runtime.newAccount();
      const instance = await runtime.activeInstance(apiKey);
      await setBillingState(runtime.deps, accountId, { billing_paused: true, balance: 0 });

      const refused = await Promise.all(
        [{ type: 'power_on' }, { type: 'reboot' }, { type: 'resize', flavor: 's-2vcpu-4gb' }].map((body) =>
          action(apiKey, instance.instance_id, body),
        ),
      );
      const off = await action(apiKey, instance.instance_id, { type: 'power_off' });

      for (const response of refused) expect([response.status, response.body.error]).toEqual([403, 'Instance is billing-paused']);
      expect(off.status).toBe(200);
      await runtime.waitForJob(apiKey, off.body.job_id);
    });

    it('answers 402 for power_on when the balance is 0 or less', async () => {
      const { apiKey, accountId } = await runtime.newAccount();
      const instance = await runtime.activeInstance(apiKey);
      const off = await action(apiKey, instance.instance_id, { type: 'power_off' });
      await runtime.waitForJob(apiKey, off.body.job_id);
      await setBillingState(runtime.deps, accountId, { balance: 0 });

      const response = await action(apiKey, instance.instance_id, { type: 'power_on' });

      expect([response.status, response.body.error]).toEqual([402, 'Insufficient balance to power on']);
    });

    it.each([
      { type: 'power_on', from: 'active' },
      { type: 'reboot', from: 'stopped' },
      { type: 'resize', from: 'pending', flavor: 's-2vcpu-4gb' },
      { type: 'power_off', from: 'quarantined' },
      { type: 'resize', from: 'quarantined', flavor: 's-2vcpu-4gb' },
      { type: 'reboot', from: 'failed' },
    ])('answers 409 with the current status for $type while $from', async ({ type, from, flavor }) => {
      const { apiKey } = await runtime.newAccount();
      const instance =
        from === 'pending'
          ? (await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'p', flavor: 's-1vcpu-2gb' } })).body
          : await runtime.activeInstance(apiKey);
      if (from === 'stopped')
        await runtime.waitForJob(apiKey, (await action(apiKey, instance.instance_id, { type: 'power_off' })).body.job_id);
      if (from === 'quarantined' || from === 'failed')
        await transitionInstance(runtime.deps, instance.instance_id, ['active'], { status: from });

      const response = await action(apiKey, instance.instance_id, { type, ...(flavor ? { flavor } : {}) });

      expect(response.status).toBe(409);
      expect(response.body.error).toBe('lifecycle conflict');
      // A pending instance may already have moved on to provisioning by the time the action arrives.
      expect(from === 'pending' ? ['pending', 'provisioning'] : [from]).toContain(response.body.status);
    });

    it('answers 409 while another action is still running', async () => {
      const { apiKey } = await runtime.newAccount();
      const instance = await runtime.activeInstance(apiKey);
      await runtime.simulator.control.config({ action_ms: 2_000 });

      const first = await action(apiKey, instance.instance_id, { type: 'reboot' });
      const second = await action(apiKey, instance.instance_id, { type: 'reboot' });
      await runtime.simulator.control.config({ action_ms: 75 });

      expect(first.status).toBe(200);
      expect([second.status, second.body.error]).toEqual([409, 'lifecycle conflict']);
      expect(second.body.status).toBe('active');
      await runtime.waitForJob(apiKey, first.body.job_id);
    });

    it('answers 502 "Upstream error" when the upstream refuses, and leaves the instance as it was', async () => {
      const { apiKey } = await runtime.newAccount();
      const instance = await runtime.activeInstance(apiKey);
      await runtime.simulator.control.faults({ fail_next: 1, status: 422, match: 'POST /v2/droplets/' });

      const refused = await action(apiKey, instance.instance_id, { type: 'reboot' });
      const retried = await action(apiKey, instance.instance_id, { type: 'reboot' });

      expect([refused.status, refused.body.error]).toEqual([502, 'Upstream error']);
      expect(retried.status).toBe(200);
      await runtime.waitForJob(apiKey, retried.body.job_id);
    });

    it.each([
      { why: 'keeps refusing past the retries', fault: { fail_next: 5, status: 429 } },
      { why: 'refuses the action for good', fault: { fail_next: 1, status: 422 } },
    ])('answers 502 "Upstream error" when the upstream $why', async ({ fault }) => {
      const { apiKey } = await runtime.newAccount();
      const instance = await runtime.activeInstance(apiKey);
      await runtime.simulator.control.faults({ ...fault, match: 'POST /v2/droplets/' });

      const response = await action(apiKey, instance.instance_id, { type: 'power_off' });
      await runtime.simulator.control.faults({ fail_next: 0 });

      expect([response.status, response.body.error]).toEqual([502, 'Upstream error']);
      expect((await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey })).body.status).toBe('active');
    });

    it('answers 503 "Tier capacity exhausted" when the resize target tier is full, and holds nothing', async () => {
      const { apiKey } = await runtime.newAccount();
      const instance = await runtime.activeInstance(apiKey, 's-1vcpu-2gb');
      await setCapacityLimit(runtime.deps, { kind: 'tier', flavor: 's-16vcpu-32gb' }, 0);

      const response = await action(apiKey, instance.instance_id, { type: 'resize', flavor: 's-16vcpu-32gb' });
      await setCapacityLimit(runtime.deps, { kind: 'tier', flavor: 's-16vcpu-32gb' }, 1000);

      expect([response.status, response.body.error]).toEqual([503, 'Tier capacity exhausted']);
      expect((await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey })).body.status).toBe('active');
      expect(await capacityUsed(runtime.deps, 'capacity#tier#s-16vcpu-32gb')).toBe(0);
    });
  });
});

describe('DELETE /api/v1/instances/{instance_id}', () => {
  it('hides the instance at once, destroys the server and releases its capacity', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey, 's-8vcpu-16gb');
    const tierBefore = await capacityUsed(runtime.deps, 'capacity#tier#s-8vcpu-16gb');

    const deleted = await runtime.call('DELETE', `/api/v1/instances/${instance.instance_id}`, { apiKey });
    const get = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });
    const list = await runtime.call('GET', '/api/v1/instances', { apiKey });
    const again = await runtime.call('DELETE', `/api/v1/instances/${instance.instance_id}`, { apiKey });
    const job = await runtime.waitForJob(apiKey, deleted.body.job_id);

    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ instance_id: instance.instance_id, status: 'deleting', job_id: expect.any(String) });
    expect([get.status, get.body.error]).toEqual([404, 'Instance not found']);
    expect(list.body).toEqual([]);
    expect(again.status).toBe(404);
    expect(job).toMatchObject({ type: 'delete', status: 'succeeded' });
    expect(runtime.simulator.state().droplets.filter((d) => d.tags.includes(upstreamTagOf(runtime.deps, instance.instance_id)))).toEqual(
      [],
    );
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-8vcpu-16gb')).toBe(tierBefore - 1);
  });

  it('deletes an instance that is still provisioning and leaves no server behind', async () => {
    const { apiKey } = await runtime.newAccount();
    const ipv4Before = await capacityUsed(runtime.deps, 'capacity#ipv4');
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'brief', flavor: 's-4vcpu-8gb' } });

    const deleted = await runtime.call('DELETE', `/api/v1/instances/${created.body.instance_id}`, { apiKey });
    const job = await runtime.waitForJob(apiKey, deleted.body.job_id);
    await runtime.stepFunctions.idle();

    expect(job.status).toBe('succeeded');
    expect(
      runtime.simulator.state().droplets.filter((d) => d.tags.includes(upstreamTagOf(runtime.deps, created.body.instance_id))),
    ).toEqual([]);
    expect(await capacityUsed(runtime.deps, 'capacity#ipv4')).toBe(ipv4Before);
  });

  describe('while the upstream listing leaves the server out', () => {
    afterEach(() => runtime.simulator.control.faults({ unlisted: [], fail_next: 0 }));

    it('destroys the server by its id at the upstream before the instance ends destroyed', async () => {
      const { apiKey } = await runtime.newAccount();
      const instance = await runtime.activeInstance(apiKey);
      const serverId = Number(instance.vps_id);
      await runtime.simulator.control.faults({ unlisted: [serverId] });

      const deleted = await runtime.call('DELETE', `/api/v1/instances/${instance.instance_id}`, { apiKey });
      const job = await runtime.waitForJob(apiKey, deleted.body.job_id);

      expect(deleted.status).toBe(200);
      expect(job).toMatchObject({ type: 'delete', status: 'succeeded' });
      expect(runtime.simulator.state().destroyed.filter((d) => d.id === serverId)).toEqual([expect.objectContaining({ via: 'api' })]);
      expect(runtime.simulator.state().droplets.map((d) => d.id)).not.toContain(serverId);
      expect((await getInstanceItem(runtime.deps, instance.instance_id))?.status).toBe('destroyed');
    });

    it('destroys the server again when its destroy answered 404 but a read by id still finds it', async () => {
      const { apiKey } = await runtime.newAccount();
      const instance = await runtime.activeInstance(apiKey);
      const serverId = Number(instance.vps_id);
      await runtime.simulator.control.faults({ unlisted: [serverId], fail_next: 1, status: 404, match: `DELETE /v2/droplets/${serverId}` });

      const deleted = await runtime.call('DELETE', `/api/v1/instances/${instance.instance_id}`, { apiKey });
      const job = await runtime.waitForJob(apiKey, deleted.body.job_id);

      expect(job).toMatchObject({ type: 'delete', status: 'succeeded' });
      expect(runtime.simulator.state().calls['DELETE /v2/droplets/{id}']).toBeGreaterThanOrEqual(2);
      expect(runtime.simulator.state().destroyed.filter((d) => d.id === serverId)).toEqual([expect.objectContaining({ via: 'api' })]);
      expect((await getInstanceItem(runtime.deps, instance.instance_id))?.status).toBe('destroyed');
    });
  });

  it('returns 404 when the instance belongs to another account', async () => {
    const owner = await runtime.newAccount();
    const stranger = await runtime.newAccount();
    const instance = await runtime.activeInstance(owner.apiKey);

    const response = await runtime.call('DELETE', `/api/v1/instances/${instance.instance_id}`, { apiKey: stranger.apiKey });

    expect([response.status, response.body.error]).toEqual([404, 'Instance not found']);
    expect((await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey: owner.apiKey })).status).toBe(200);
  });
});

describe('GET /api/v1/jobs/{job_id}', () => {
  it("returns 404 for another account's job and for an unknown one", async () => {
    const owner = await runtime.newAccount();
    const stranger = await runtime.newAccount();
    const instance = await runtime.activeInstance(owner.apiKey);
    const off = await action(owner.apiKey, instance.instance_id, { type: 'power_off' });

    const theirs = await runtime.call('GET', `/api/v1/jobs/${off.body.job_id}`, { apiKey: stranger.apiKey });
    const unknown = await runtime.call('GET', '/api/v1/jobs/00000000-0000-0000-0000-000000000000', { apiKey: owner.apiKey });
    const mine = await runtime.waitForJob(owner.apiKey, off.body.job_id);

    expect([theirs.status, theirs.body.error]).toEqual([404, 'Job not found']);
    expect(unknown.status).toBe(404);
    expect(mine).toEqual({
      job_id: off.body.job_id,
      type: 'power_off',
      instance_id: instance.instance_id,
      status: 'succeeded',
      started_at: expect.any(String),
      finished_at: expect.any(String),
      error: null,
    });
  });
});

describe('live status in GET /api/v1/instances/{instance_id}', () => {
  it('shows stopped when the server was shut down from inside, and keeps it', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);

    await runtime.simulator.control.powerOff(Number(instance.vps_id));
    const detail = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });
    const list = await runtime.call('GET', '/api/v1/instances', { apiKey });

    expect(detail.body.status).toBe('stopped');
    expect(list.body[0].status).toBe('stopped');
  });

  it('answers from stored state when the upstream is failing or slow', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);

    await runtime.simulator.control.faults({ fail_next: 1, status: 500 });
    const failing = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });
    // Far slower than the live read's 800 ms budget, so that only a detail that waited for the upstream comes near it.
    await runtime.simulator.control.faults({ latency_ms: 15_000 });
    const started = Date.now();
    const slow = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });
    const elapsed = Date.now() - started;
    await runtime.simulator.control.faults({ latency_ms: 0 });

    expect([failing.status, failing.body.status]).toEqual([200, 'active']);
    expect([slow.status, slow.body.status]).toEqual([200, 'active']);
    expect(elapsed).toBeLessThan(10_000);
  });
});
