import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { StateMachine } from 'aws-local-stepfunctions';
import { REPO_ROOT } from '../../infra/constructs/api-function';
import { localStateContext } from '../../infra/local/step-functions';
import { workflows } from '../../infra/workflows';

type Check = { action_id: number; started_at: string };

/** Runs the resize state machine with stand-in steps: each action is done on its second check. */
async function runResize(input: { phase: 'shutdown' | 'resize'; previous_status: string }) {
  const raw = readFileSync(join(REPO_ROOT, workflows.resize.definitionFile), 'utf8');
  const machine = new StateMachine(JSON.parse(raw.replace(/\$\{(\w+)\}/g, 'arn:aws:lambda:us-east-1:123456789012:function:$1')));
  const checks: Check[] = [];
  const started: string[] = [];
  let finished = 0;
  let nextActionId = 20;
  const run = machine.run(
    { instance_id: 1, job_id: 'job-1', action_id: 10, action_type: input.phase, ...input },
    {
      overrides: {
        taskResourceLocalHandlers: {
          CheckAction: async (input) => {
            const check = input as Check;
            checks.push({ action_id: check.action_id, started_at: check.started_at });
            return { done: checks.filter((c) => c.action_id === check.action_id).length >= 2 };
          },
          StartAction: async (input) => {
            const { type } = input as { type: string };
            // Some time passes before the next phase begins.
            await sleep(30);
            started.push(type);
            return { action_id: nextActionId++ };
          },
          FinishResize: async () => {
            finished++;
            return { awaiting_ssh: false };
          },
        },
        waitTimeOverrides: { WaitForAction: 5, WaitBeforeLooking: 5 },
      },
      context: { State: localStateContext },
    },
  );
  await run.result;
  const phases = new Map<number, string[]>();
  for (const check of checks) phases.set(check.action_id, [...(phases.get(check.action_id) ?? []), check.started_at]);
  return { phases, started, finished };
}

describe('the resize state machine', () => {
  it('checks each phase against the time that phase began, not the execution start', async () => {
    const { phases, started, finished } = await runResize({ phase: 'shutdown', previous_status: 'active' });

    expect(started).toEqual(['resize', 'power_on']);
    expect(finished).toBe(1);
    expect([...phases.keys()]).toEqual([10, 20, 21]);
    const [shutdown, resize, powerOn] = [...phases.values()].map((times) => {
      // Every check of one phase gets the same start.
      expect(new Set(times).size).toBe(1);
      return Date.parse(times[0]!);
    });
    expect(resize).toBeGreaterThan(shutdown!);
    expect(powerOn).toBeGreaterThan(resize!);
  });

  it('waits for the resize the API started, then swaps the plan without powering on a server that was off', async () => {
    const { phases, started, finished } = await runResize({ phase: 'resize', previous_status: 'stopped' });

    expect(started).toEqual([]);
    expect([...phases.keys()]).toEqual([10]);
    expect(finished).toBe(1);
  });

  it('powers on after a resize the API started when the server was running', async () => {
    const { phases, started } = await runResize({ phase: 'resize', previous_status: 'active' });

    expect(started).toEqual(['power_on']);
    expect([...phases.keys()]).toEqual([10, 20]);
  });
});
