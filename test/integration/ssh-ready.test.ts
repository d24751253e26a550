import { tcpSshProbe } from '../../shared/upstream/ssh-probe';
import { upstreamTagOf } from '../../shared/domain/instances';
import type { ServiceEvent } from '../../shared/schemas/events';
import { useTestRuntime } from '../support/runtime';

// A server's SSH may take up to 8 s to answer once the upstream runs it: time enough for a test to see it silent on
// a busy machine, and to let it answer.
const runtime = useTestRuntime({ env: { SSH_WAIT_SECONDS: '8' } });
const probe = tcpSshProbe(1_000);

const events: ServiceEvent[] = [];
beforeAll(() => runtime.events.subscribe(async (event) => void events.push(event)));
afterEach(() => runtime.simulator.control.reset());

const droplets = (instanceId: number) =>
  runtime.simulator.state().droplets.filter((droplet) => droplet.tags.includes(upstreamTagOf(runtime.deps, instanceId)));

describe('SSH-ready provisioning', () => {
  it('stays provisioning while the server runs but its SSH is silent, and is active once SSH answers', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.simulator.control.faults({ ssh_silent: true });

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'ssh', flavor: 's-1vcpu-2gb' } });
    expect(created.body.ssh_port).toBe(runtime.simulator.sshPort);
    const instanceId: number = created.body.instance_id;
    // The upstream reports the server running (its address shows) while the instance still waits for SSH.
    const booted = await runtime.waitFor('the server to run upstream', async () => {
      const { body } = await runtime.call('GET', `/api/v1/instances/${instanceId}`, { apiKey });
      return body.ipv4 !== null && droplets(instanceId)[0]?.status === 'active' ? body : undefined;
    });
    const sshAtBoot = await probe.answers(booted.ipv4, booted.ssh_port);
    await runtime.simulator.control.faults({ ssh_silent: false });
    const active = await runtime.waitForStatus(apiKey, instanceId, ['active', 'failed']);

    expect(sshAtBoot).toBe(false);
    expect(booted).toMatchObject({ status: 'provisioning', activated_at: null });
    expect(active).toMatchObject({ status: 'active', ipv4: booted.ipv4, ssh_port: runtime.simulator.sshPort });
    expect(active).not.toHaveProperty('failure');
    expect(await probe.answers(String(active.ipv4), Number(active.ssh_port))).toBe(true);
  });

  it('fails with ssh_timeout when the server runs but SSH never answers, destroying the server', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.simulator.control.faults({ ssh_silent: true });

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'mute', flavor: 's-1vcpu-2gb' } });
    const instanceId: number = created.body.instance_id;
    const failed = await runtime.waitForStatus(apiKey, instanceId, ['active', 'failed']);
    await runtime.stepFunctions.idle();
    const ofInstance = (type: string) =>
      runtime.waitFor(`${type} of instance ${instanceId}`, async () =>
        events.find(
          (event) =>
            event.type === type &&
            event.instance_id === instanceId &&
            (event.type !== 'instance.status_changed' || event.data.to === 'failed'),
        ),
      );
    const jobFailed = await ofInstance('job.failed');
    const statusChanged = await ofInstance('instance.status_changed');
    const job = await runtime.call('GET', `/api/v1/jobs/${(jobFailed.data as { job_id: string }).job_id}`, { apiKey });

    const reason = { code: 'ssh_timeout', message: 'The server started but SSH did not answer in time' };
    expect(failed).toMatchObject({ status: 'failed', failure: reason });
    expect(job.body).toMatchObject({ type: 'provision', status: 'failed', error: reason.message, failure: reason });
    expect(jobFailed.data).toEqual({ job_id: job.body.job_id, job_type: 'provision', error: reason.message, failure: reason });
    expect(statusChanged.data).toMatchObject({ from: 'provisioning', to: 'failed', failure: reason });
    expect(droplets(instanceId)).toEqual([]);
  });

  it('ends a power-on once SSH answers, keeping the instance stopped until then', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);
    const path = `/api/v1/instances/${instance.instance_id}`;
    const off = await runtime.call('POST', `${path}/actions`, { apiKey, body: { type: 'power_off' } });
    await runtime.waitForJob(apiKey, off.body.job_id);
    await runtime.simulator.control.faults({ ssh_silent: true });

    const on = await runtime.call('POST', `${path}/actions`, { apiKey, body: { type: 'power_on' } });
    // The upstream runs the server again while its SSH is still silent: the job waits.
    const running = await runtime.waitFor('the server to run upstream', async () =>
      droplets(instance.instance_id)[0]?.status === 'active' ? droplets(instance.instance_id)[0] : undefined,
    );
    const meanwhile = await runtime.call('GET', `/api/v1/jobs/${on.body.job_id}`, { apiKey });
    const detail = await runtime.call('GET', path, { apiKey });
    const sshMeanwhile = await probe.answers(String(running.ipv4), Number(instance.ssh_port));
    await runtime.simulator.control.faults({ ssh_silent: false });
    const job = await runtime.waitForJob(apiKey, on.body.job_id);
    const after = await runtime.call('GET', path, { apiKey });

    expect(sshMeanwhile).toBe(false);
    expect(meanwhile.body.status).toBe('running');
    expect(detail.body.status).toBe('stopped');
    expect(job).toMatchObject({ type: 'power_on', status: 'succeeded' });
    expect(after.body.status).toBe('active');
    expect(await probe.answers(String(after.body.ipv4), Number(after.body.ssh_port))).toBe(true);
  });

  it('fails a reboot with ssh_timeout when SSH does not come back, the instance active as the upstream runs it', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);
    await runtime.simulator.control.faults({ ssh_silent: true });

    const reboot = await runtime.call('POST', `/api/v1/instances/${instance.instance_id}/actions`, { apiKey, body: { type: 'reboot' } });
    const job = await runtime.waitForJob(apiKey, reboot.body.job_id);
    const after = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });

    const reason = { code: 'ssh_timeout', message: 'The server started but SSH did not answer in time' };
    expect(job).toMatchObject({ type: 'reboot', status: 'failed', error: reason.message, failure: reason });
    expect(after.body.status).toBe('active');
    expect(after.body).not.toHaveProperty('failure');
  });
});
