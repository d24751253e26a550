import { reconcile } from '../../shared/domain/reconciler';
import { upstreamTagOf } from '../../shared/domain/instances';
import type { EndpointFault } from '../../infra/local/step-functions';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

/** A reconciler run told a time past its grace period: the work the requests left is taken up now. */
const reconcileNow = () => reconcile(runtime.deps, Date.now() + 10 * 60_000);
const serversOf = (instanceId: number) =>
  runtime.simulator.state().droplets.filter((droplet) => droplet.tags.includes(upstreamTagOf(runtime.deps, instanceId)));

afterEach(() => runtime.stepFunctions.fault('StartExecution', undefined));

describe('a create while Step Functions refuses to start executions', () => {
  it.each<[string, EndpointFault]>([
    ['answers 503', { status: 503 }],
    ['resets the connection', { reset: true }],
  ])(
    'is accepted (202) when Step Functions %s, a retry with its key answers the same instance, and it provisions once started',
    async (_, fault) => {
      const { apiKey } = await runtime.newAccount();
      const body = { project_name: 'unstarted', flavor: 's-1vcpu-2gb' };
      const headers = { 'idempotency-key': `unstarted-${'reset' in fault ? 'reset' : fault.status}` };
      runtime.stepFunctions.fault('StartExecution', fault);

      const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body, headers });
      const retried = await runtime.call('POST', '/api/v1/instances', { apiKey, body, headers });
      runtime.stepFunctions.fault('StartExecution', undefined);
      const report = await reconcileNow();
      const active = await runtime.waitForStatus(apiKey, created.body.instance_id, ['active', 'failed']);
      const listed = await runtime.call('GET', '/api/v1/instances', { apiKey });

      expect([created.status, created.body.status]).toEqual([202, 'pending']);
      expect([retried.status, retried.body.instance_id]).toEqual([202, created.body.instance_id]);
      expect(report.provisionsStarted).toBe(1);
      expect(active.status).toBe('active');
      expect(listed.body.map((instance: { instance_id: number }) => instance.instance_id)).toEqual([created.body.instance_id]);
      expect(serversOf(created.body.instance_id)).toHaveLength(1);
    },
  );
});

describe('an action while Step Functions refuses to start executions', () => {
  it('is accepted (200), and the reconciler settles it to the upstream: powered off, its job succeeded', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);
    runtime.stepFunctions.fault('StartExecution', { status: 503 });

    const accepted = await runtime.call('POST', `/api/v1/instances/${instance.instance_id}/actions`, {
      apiKey,
      body: { type: 'power_off' },
    });
    runtime.stepFunctions.fault('StartExecution', undefined);
    await runtime.waitFor('the server to be off', async () => (serversOf(instance.instance_id)[0]?.status === 'off' ? true : undefined));
    const report = await reconcileNow();
    const job = await runtime.call('GET', `/api/v1/jobs/${accepted.body.job_id}`, { apiKey });
    const after = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });

    expect([accepted.status, accepted.body.ok]).toEqual([200, true]);
    expect(report.actionsSettled).toBe(1);
    expect(job.body).toMatchObject({ status: 'succeeded', error: null });
    expect(job.body).not.toHaveProperty('failure');
    expect(after.body.status).toBe('stopped');
  });
});

describe('a delete while Step Functions refuses to start executions', () => {
  it('is accepted (200), and the instance ends destroyed once the reconciler has started its delete', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);
    runtime.stepFunctions.fault('StartExecution', { status: 503 });

    const deleted = await runtime.call('DELETE', `/api/v1/instances/${instance.instance_id}`, { apiKey });
    runtime.stepFunctions.fault('StartExecution', undefined);
    const report = await reconcileNow();
    await runtime.stepFunctions.idle();

    expect([deleted.status, deleted.body.status]).toEqual([200, 'deleting']);
    expect(report.deletesRestarted).toBe(1);
    expect(serversOf(instance.instance_id)).toEqual([]);
  });
});
