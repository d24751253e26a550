import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../infra/constructs/api-function';
import { workflows } from '../../infra/workflows';
import { workflowNames } from '../../shared/workflow-names';
import { ActionOutcomeUnknownError } from '../../shared/domain/action-steps';
import { DependencyTransientError } from '../../shared/transient-errors';
import { UpstreamTransientError } from '../../shared/upstream/driver';

type Entry = Record<string, unknown> & { ErrorEquals: string[] };
type AslState = { Type: string; Retry?: Entry[]; Catch?: (Entry & { Next: string })[] };
type Policies = { Retry: Record<string, Entry>; Catch: Record<string, Entry> };

const policies = JSON.parse(readFileSync(join(REPO_ROOT, 'statemachines/retry-policies.json'), 'utf8')) as Policies;

/** Every state of an ASL definition, with where it sits (nested branches and item processors included). */
function statesOf(file: string): [string, AslState][] {
  const walk = (states: Record<string, AslState & Record<string, any>>, prefix: string): [string, AslState][] =>
    Object.entries(states).flatMap(([name, state]) => [
      [`${prefix}${name}`, state] as [string, AslState],
      ...((state.Branches ?? []) as { States: Record<string, any> }[]).flatMap((branch, i) =>
        walk(branch.States, `${prefix}${name}[${i}].`),
      ),
      ...[state.Iterator, state.ItemProcessor].filter(Boolean).flatMap((inner) => walk(inner.States, `${prefix}${name}.`)),
    ]);
  return walk(JSON.parse(readFileSync(join(REPO_ROOT, file), 'utf8')).States, '');
}

const definitionFiles = workflowNames.map((name) => workflows[name].definitionFile);
const tasks = definitionFiles.flatMap((file) =>
  statesOf(file)
    .filter(([, state]) => state.Type === 'Task')
    .map(([name, state]) => ({ where: `${file} ${name}`, state })),
);

/** The policy an entry is, by exact equality (no field more or less, the errors in the same order). */
const named = (table: Record<string, Entry>, entry: object) =>
  Object.entries(table).find(([, policy]) => JSON.stringify(policy) === JSON.stringify(entry))?.[0];

const withoutNext = ({ Next: _next, ...entry }: Entry & { Next: string }) => entry;

describe('retry policies', () => {
  it('covers every state machine in statemachines/', () => {
    const files = readdirSync(join(REPO_ROOT, 'statemachines'))
      .filter((file) => file.endsWith('.asl.json'))
      .map((file) => `statemachines/${file}`);
    expect([...files].sort()).toEqual([...definitionFiles].sort());
  });

  it('gives every Task exactly one Retry entry, and it is one of the named policies', () => {
    for (const { where, state } of tasks) {
      expect(state.Retry, where).toHaveLength(1);
      expect(named(policies.Retry, state.Retry![0]!), `${where}: ${JSON.stringify(state.Retry![0])}`).toBeDefined();
    }
  });

  it('has Retry only on Task states', () => {
    for (const file of definitionFiles) {
      for (const [name, state] of statesOf(file)) {
        if (state.Type !== 'Task') expect(state.Retry, `${file} ${name}`).toBeUndefined();
      }
    }
  });

  it('gives every Catch entry one of the named catch shapes, the catch-all last', () => {
    for (const { where, state } of tasks) {
      const entries = state.Catch ?? [];
      for (const entry of entries) {
        expect(named(policies.Catch, withoutNext(entry)), `${where}: ${JSON.stringify(entry)}`).toBeDefined();
      }
      const catchAll = entries.findIndex((entry) => entry.ErrorEquals.includes('States.ALL'));
      if (catchAll !== -1) expect(catchAll, where).toBe(entries.length - 1);
    }
  });

  it('uses every named policy and catch shape somewhere (none is left over)', () => {
    const retries = new Set(tasks.flatMap(({ state }) => (state.Retry ?? []).map((entry) => named(policies.Retry, entry))));
    const catches = new Set(tasks.flatMap(({ state }) => (state.Catch ?? []).map((entry) => named(policies.Catch, withoutNext(entry)))));
    expect([...retries].sort()).toEqual(Object.keys(policies.Retry).sort());
    expect([...catches].sort()).toEqual(Object.keys(policies.Catch).sort());
  });

  it('retries transient errors by the names the steps throw them with', () => {
    expect(policies.Retry.Transient!.ErrorEquals).toContain(new DependencyTransientError('').name);
    expect(policies.Retry.Transient!.ErrorEquals).toContain(new UpstreamTransientError('').name);
    expect(policies.Catch.StillFailing!.ErrorEquals).toEqual([new UpstreamTransientError('').name, new DependencyTransientError('').name]);
    expect(policies.Catch.OutcomeUnknown!.ErrorEquals).toEqual([new ActionOutcomeUnknownError('').name]);
  });

  it('names DependencyTransientError in every Retry but those of the steps that settle a failure', () => {
    const settling = tasks.filter(({ state }) => named(policies.Retry, state.Retry![0]!) === 'UntilSettled').map(({ where }) => where);
    expect(settling.sort()).toEqual(
      [
        'statemachines/provision.asl.json Compensate',
        'statemachines/power.asl.json FailAction',
        'statemachines/resize.asl.json FailAction',
        'statemachines/delete.asl.json FinishDelete',
        'statemachines/delete.asl.json DeleteFailed',
      ].sort(),
    );
    for (const { where, state } of tasks.filter(({ where }) => !settling.includes(where))) {
      expect(state.Retry![0]!.ErrorEquals, where).toContain('DependencyTransientError');
      expect(state.Retry![0]!.ErrorEquals, where).toContain('UpstreamTransientError');
    }
  });

  it('names no AWS error the step boundary renames: those reach the state machines as DependencyTransientError', () => {
    const renamed = [
      'TransactionConflictException',
      'ProvisionedThroughputExceededException',
      'ThrottlingException',
      'RequestLimitExceeded',
      'InternalServerError',
    ];
    for (const { where, state } of tasks) {
      for (const entry of [...(state.Retry ?? []), ...(state.Catch ?? [])]) {
        expect(
          entry.ErrorEquals.filter((name) => renamed.includes(name)),
          where,
        ).toEqual([]);
      }
    }
  });

  it('backs off long enough to ride out an outage of several seconds, even with full jitter', () => {
    const { IntervalSeconds, MaxAttempts, BackoffRate, MaxDelaySeconds } = policies.Retry.Transient as Record<string, number>;
    const ceilings = Array.from({ length: MaxAttempts! }, (_, retry) =>
      Math.min(MaxDelaySeconds!, IntervalSeconds! * BackoffRate! ** retry),
    );
    const sum = ceilings.reduce((a, b) => a + b, 0);
    // Full jitter draws each pause from 0 to its ceiling: half the sum on average; three deviations below that is 30 s or more.
    const variance = ceilings.reduce((total, ceiling) => total + ceiling ** 2 / 12, 0);
    expect(sum / 2 - 3 * Math.sqrt(variance)).toBeGreaterThanOrEqual(30);
    // Within the smallest budget a step retries under: provisioning's 600 s.
    expect(sum).toBeLessThanOrEqual(600);
  });
});
