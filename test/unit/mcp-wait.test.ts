import { waitForInstance, type Waiting } from '../../shared/mcp/wait';
import type { RouteAnswer } from '../../shared/mcp/route-calls';

type Stored = { status: string; active_job_id: string | null; failure?: { code: string; message: string } } | undefined;

/** A wait's world: the route's first answer, then the stored instance read by read, on a clock that sleeps advance. */
function world(first: RouteAnswer, reads: Stored[]) {
  let clock = 0;
  const pauses: number[] = [];
  const progress: string[] = [];
  const io: Waiting = {
    call: async () => first,
    readInstance: async (instanceId) => {
      const next = reads.length > 1 ? reads.shift() : reads[0];
      return next && ({ instance_id: instanceId, ipv4: '203.0.113.9', ssh_port: 22, ...next } as never);
    },
    now: () => clock,
    remainingMs: () => 29_000 - clock,
    sleep: async (ms) => {
      pauses.push(ms);
      clock += ms;
    },
    progress: async (elapsed, total, message) => void progress.push(`${elapsed}/${total} ${message}`),
  };
  return { io, pauses, progress };
}

const detail = (status: string): RouteAnswer => ({
  status: 200,
  headers: {},
  body: { instance_id: 7, status, ipv4: null, ssh_port: 22, root_password: 'secret' },
});

describe('waitForInstance', () => {
  it('reads with backoff until the server is active, telling its progress', async () => {
    const { io, pauses, progress } = world(detail('provisioning'), [
      { status: 'provisioning', active_job_id: 'j' },
      { status: 'provisioning', active_job_id: 'j' },
      { status: 'active', active_job_id: null },
    ]);

    const outcome = await waitForInstance({ instance_id: 7, until: 'active', timeout_s: 20 }, io);

    expect(outcome).toEqual({
      ok: true,
      value: { instance_id: 7, status: 'active', reached: true, waited_s: 4, ipv4: '203.0.113.9', ssh_port: 22 },
    });
    expect(pauses).toEqual([1_000, 1_000, 2_000]);
    expect(progress).toEqual(['0/20 7 is provisioning', '1/20 7 is provisioning', '2/20 7 is provisioning']);
  });

  it('answers at once, without a read, when the server is already there', async () => {
    const { io, pauses } = world(detail('active'), []);

    const outcome = await waitForInstance({ instance_id: 7, until: 'active', timeout_s: 20 }, io);

    expect(outcome).toMatchObject({ ok: true, value: { status: 'active', reached: true, waited_s: 0 } });
    expect(pauses).toEqual([]);
  });

  it('ends early with the reason when the server fails', async () => {
    const failure = { code: 'ssh_timeout', message: 'The server started but SSH did not answer in time' };
    const { io } = world(detail('provisioning'), [{ status: 'failed', active_job_id: null, failure }]);

    const outcome = await waitForInstance({ instance_id: 7, until: 'active', timeout_s: 20 }, io);

    expect(outcome).toMatchObject({ ok: true, value: { status: 'failed', reached: false, failure } });
  });

  it('ends early when the server is running with nothing under way and stopped was asked', async () => {
    const { io, pauses } = world(detail('active'), [{ status: 'active', active_job_id: null }]);

    const outcome = await waitForInstance({ instance_id: 7, until: 'stopped', timeout_s: 20 }, io);

    expect(outcome).toMatchObject({ ok: true, value: { status: 'active', reached: false } });
    expect(pauses).toEqual([1_000]);
  });

  it('stops at its timeout, not reached', async () => {
    const { io, pauses } = world(detail('provisioning'), [{ status: 'provisioning', active_job_id: 'j' }]);

    const outcome = await waitForInstance({ instance_id: 7, until: 'active', timeout_s: 10 }, io);

    expect(outcome).toMatchObject({ ok: true, value: { status: 'provisioning', reached: false, waited_s: 9 } });
    expect(pauses).toEqual([1_000, 1_000, 2_000, 2_000, 3_000]);
  });

  it.each([
    { until: 'deleted' as const, outcome: { ok: true, value: { status: 'deleted', reached: true } } },
    { until: 'active' as const, outcome: { ok: false, answer: { status: 404 } } },
  ])("takes the route's 404 as deleted when waiting for $until", async ({ until, outcome }) => {
    const { io } = world({ status: 404, headers: {}, body: { error: 'Instance not found' } }, []);

    expect(await waitForInstance({ instance_id: 7, until, timeout_s: 20 }, io)).toMatchObject(outcome);
  });

  it('answers deleted once the instance is gone while it waits for deletion', async () => {
    const { io } = world(detail('deleting'), [undefined]);

    const outcome = await waitForInstance({ instance_id: 7, until: 'deleted', timeout_s: 20 }, io);

    expect(outcome).toMatchObject({ ok: true, value: { status: 'deleted', reached: true, ipv4: null } });
  });
});
