// Metrics are switched on before any handler is loaded (Powertools reads the switch once); hence the dynamic imports.
process.env.POWERTOOLS_METRICS_DISABLED = 'false';

export {};

const { useTestRuntime } = await import('../support/runtime');
const { captureStdoutLines } = await import('../support/stdout');

const runtime = useTestRuntime();

/** The EMF documents among the lines, with the metric names each one carries. */
function emfMetrics(lines: string[]): Record<string, unknown>[] {
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((document) => '_aws' in document);
}

describe('EMF metrics', () => {
  it('publishes deploys, provisioning success and duration, and rate-limited requests', async () => {
    const { apiKey } = await runtime.newAccount();

    const lines = await captureStdoutLines(async () => {
      for (let i = 0; i < 6; i++) {
        await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: `m${i}`, flavor: 's-1vcpu-2gb' } });
      }
      await runtime.stepFunctions.idle();
    });

    const documents = emfMetrics(lines);
    const total = (name: string) => documents.reduce((sum, d) => sum + (typeof d[name] === 'number' ? (d[name] as number) : 0), 0);
    expect(total('DeploysAccepted')).toBe(5);
    expect(total('RateLimited')).toBe(1);
    expect(total('ProvisionSucceeded')).toBe(5);
    expect(documents.some((d) => typeof d.ProvisionDuration === 'number' || Array.isArray(d.ProvisionDuration))).toBe(true);
    expect(
      documents.every((d) => (d._aws as { CloudWatchMetrics: { Namespace: string }[] }).CloudWatchMetrics[0]?.Namespace === 'VpsService'),
    ).toBe(true);
  });

  it('counts a 502 once on an idempotent route, though its answer is also stored for replay', async () => {
    const { apiKey } = await runtime.newAccount();
    const instance = await runtime.activeInstance(apiKey);
    await runtime.simulator.control.faults({ fail_next: 1, status: 422, match: 'POST /v2/droplets/' });

    const lines = await captureStdoutLines(async () => {
      const refused = await runtime.call('POST', `/api/v1/instances/${instance.instance_id}/actions`, {
        apiKey,
        body: { type: 'reboot' },
        headers: { 'idempotency-key': 'metrics-once' },
      });
      expect([refused.status, refused.body.error]).toEqual([502, 'Upstream error']);
    });

    // A metric counted twice in one invocation is published as an array of values.
    const values = emfMetrics(lines).flatMap((d) => (d.UpstreamErrors === undefined ? [] : [d.UpstreamErrors].flat()));
    expect(values).toEqual([1]);
  });
});
