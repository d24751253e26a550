import { sshReadiness } from '../../shared/domain/ssh-readiness';
import { unitDeps } from '../support/unit-deps';

const SINCE = '2026-11-25T10:00:00.000Z';
const at = (seconds: number) => new Date(Date.parse(SINCE) + seconds * 1000);

/** Deps whose clock reads `now` and whose probe finds SSH answering from `answersFrom` seconds after SINCE. */
function depsAt(now: () => Date, answersFrom: number, env: Record<string, string> = {}) {
  return {
    ...unitDeps(env),
    clock: { now },
    ssh: { answers: async () => now().getTime() >= at(answersFrom).getTime() },
  };
}

const server = { ipv4: '203.0.113.7', ssh_port: 22 };

/** The seconds (after the server runs) at which the workflow probes, following each answer's wait, until SSH answers. */
async function probeTimes(answersFrom: number): Promise<number[]> {
  let seconds = 0;
  const deps = depsAt(() => at(seconds), answersFrom);
  const times: number[] = [];
  for (;;) {
    times.push(seconds);
    const readiness = await sshReadiness(deps, server, SINCE);
    if (readiness.kind !== 'waiting') return times;
    seconds += readiness.wait_seconds;
  }
}

describe('sshReadiness', () => {
  it('probes at 2, 4, 6, 9, 14, 21, 32 s and then every 15 s', async () => {
    expect(await probeTimes(60)).toEqual([0, 2, 4, 6, 9, 14, 21, 32, 47, 62]);
  });

  it.each([
    [0, 0],
    [5, 3],
    [20, 6],
  ])('costs %i s of SSH delay %i further probes (3 transitions each)', async (delay, further) => {
    expect((await probeTimes(delay)).length - 1).toBe(further);
  });

  it('answers timed_out once the wait is over without an answer', async () => {
    const deps = depsAt(() => at(301), 1_000);

    expect(await sshReadiness(deps, server, SINCE)).toEqual({ kind: 'timed_out', waited_seconds: 301 });
  });

  it('waits for a server with no address yet, without probing it', async () => {
    const deps = { ...depsAt(() => at(1), 0), ssh: { answers: async () => expect.unreachable('probed') } };

    expect(await sshReadiness(deps, { ipv4: null, ssh_port: 22 }, SINCE)).toEqual({ kind: 'waiting', wait_seconds: 2 });
  });

  it('takes its wait from SSH_WAIT_SECONDS', async () => {
    const deps = depsAt(() => at(31), 1_000, { SSH_WAIT_SECONDS: '30' });

    expect((await sshReadiness(deps, server, SINCE)).kind).toBe('timed_out');
  });
});
