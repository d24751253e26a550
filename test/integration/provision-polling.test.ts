import { useTestRuntime } from '../support/runtime';

/** Waits run at a hundredth of their length and the server boots in 45 s scaled the same way (450 ms). */
const runtime = useTestRuntime({ bootMs: 450, waitScale: 0.01 });

describe('provision polling', () => {
  it('takes at most 10 state transitions for a server that boots in 45 s', async () => {
    const { apiKey } = await runtime.newAccount();

    const active = await runtime.activeInstance(apiKey);
    await runtime.stepFunctions.idle();

    const [execution] = [...runtime.stepFunctions.executions.values()].filter((e) => e.stateMachineArn.endsWith(':stateMachine:provision'));
    const entered = execution!.events.filter((e) => e.type === 'StateEntered' || e.type === 'StateRetried').map((e) => e.state?.name);
    expect(active.status).toBe('active');
    expect(entered[0]).toBe('CreateServer');
    expect(entered.at(-1)).toBe('Provisioned');
    expect(entered.length).toBeLessThanOrEqual(10);
  });
});
