import { upstreamTagOf } from '../../shared/domain/instances';
import { capacityUsed } from '../support/capacity';
import { useTestRuntime } from '../support/runtime';

// Servers never finish booting within the one-second provisioning budget.
const runtime = useTestRuntime({ bootMs: 60_000, env: { PROVISION_TIMEOUT_SECONDS: '1' } });

describe('provision workflow', () => {
  it('fails a provision that outlives its budget, destroying the server and releasing capacity', async () => {
    const { apiKey } = await runtime.newAccount();

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'slow', flavor: 's-8vcpu-16gb' } });
    const settled = await runtime.waitForStatus(apiKey, created.body.instance_id, ['failed', 'active']);
    await runtime.stepFunctions.idle();

    expect(settled.status).toBe('failed');
    expect(settled.failure).toEqual({ code: 'provision_timeout', message: 'The server did not become active in time' });
    expect(runtime.simulator.state().droplets).toEqual([]);
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-8vcpu-16gb')).toBe(0);
    const execution = [...runtime.stepFunctions.executions.values()][0];
    expect(execution?.status).toBe('FAILED');
    expect(execution?.error).toBe('ProvisionFailed');
  });

  it('destroys the failed provision’s server by its id while the upstream listing leaves every server out', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.simulator.control.faults({ unlisted: 'all' });

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'unlisted', flavor: 's-1vcpu-2gb' } });
    const settled = await runtime.waitForStatus(apiKey, created.body.instance_id, ['failed', 'active']);
    await runtime.stepFunctions.idle();
    await runtime.simulator.control.faults({ unlisted: [] });

    expect(settled.status).toBe('failed');
    expect(
      runtime.simulator.state().droplets.filter((d) => d.tags.includes(upstreamTagOf(runtime.deps, created.body.instance_id))),
    ).toEqual([]);
  });
});
