import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { App } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import type { ServiceStack } from '../../infra/stack';
import { scheduleNames } from '../../infra/schedules';
import { ANSWER_RESERVE_SECONDS, DEFAULT_ROUTE_TIMEOUT_SECONDS, routes } from '../../shared/routes';
import { IDEMPOTENCY_LOCK_SECONDS } from '../../shared/store/idempotency';
import { workflowNames, type WorkflowName } from '../../shared/workflow-names';
import { workflows } from '../../infra/workflows';
import { logicalId, synthesize } from './synth';

/** The definition a state machine deploys: the asset file its DefinitionS3Location names, in the cloud assembly. */
function definitionOf(stack: ServiceStack, template: Template, id: string): { TimeoutSeconds?: number } {
  const { Key: key } = template.findResources('AWS::StepFunctions::StateMachine')[id]!.Properties.DefinitionS3Location;
  const assembly = (stack.node.root as App).synth();
  return JSON.parse(readFileSync(join(assembly.directory, `asset.${key}`), 'utf8'));
}

describe('deadlines', () => {
  let stack: ServiceStack;
  let template: Template;
  const timeoutOf = (fn: { function: object }) =>
    template.findResources('AWS::Lambda::Function')[logicalId(fn.function as never)]!.Properties.Timeout;

  beforeAll(() => {
    ({ stack, template } = synthesize('dev'));
  });

  it.each<[WorkflowName, number]>([
    ['provision', 1800],
    ['power', 3600],
    ['resize', 3600],
    ['delete', 3600],
  ])('gives every %s execution a timeout of %i seconds, so ExecutionsTimedOut can fire', (name, seconds) => {
    expect(definitionOf(stack, template, logicalId(stack.workflows[name].stateMachine)).TimeoutSeconds).toBe(seconds);
  });

  it('covers every state machine of the stack', () => {
    expect(Object.keys(template.findResources('AWS::StepFunctions::StateMachine'))).toHaveLength(workflowNames.length);
  });

  it.each([
    ['InstanceAction', 20, 21],
    ['GetInstance', 10, 11],
    ['CreateInstance', 10, 11],
    ['ListInstances', 10, 11],
    ['NotFound', 10, 11],
  ])(
    'gives the %s route a budget of %i seconds and its function %i, within the HTTP API integration timeout of 30',
    (name, budget, seconds) => {
      expect(routes.find((route) => route.name === name)?.timeoutSeconds ?? DEFAULT_ROUTE_TIMEOUT_SECONDS).toBe(budget);
      expect(timeoutOf(stack.api.functions[name]!)).toBe(seconds);
    },
  );

  it("gives every route's function the answer's reserve beyond its budget, so that no commit is cut off from its answer", () => {
    for (const route of routes) {
      const seconds = timeoutOf(stack.api.functions[route.name]!);
      expect(seconds, route.name).toBe((route.timeoutSeconds ?? DEFAULT_ROUTE_TIMEOUT_SECONDS) + ANSWER_RESERVE_SECONDS);
      expect(seconds, route.name).toBeLessThan(30);
    }
  });

  it('keeps an Idempotency-Key claimed longer than any idempotent route can run, so that no live request loses its claim', () => {
    const idempotent = routes.filter((route) => route.auth === 'bearer' && route.idempotent);
    expect(idempotent.map((route) => route.name).sort()).toEqual(['CreateInstance', 'InstanceAction', 'UpdateInstance']);
    for (const route of idempotent) expect(timeoutOf(stack.api.functions[route.name]!)).toBeLessThan(IDEMPOTENCY_LOCK_SECONDS);
  });

  it('gives DestroyServers 60 seconds and every other workflow step 30', () => {
    const special: Record<string, number> = { DestroyServersFunctionArn: 60 };
    for (const name of workflowNames) {
      for (const key of Object.keys(workflows[name].steps)) {
        expect(timeoutOf(stack.workflows[name].steps[key]!), `${name}.${key}`).toBe(special[key] ?? 30);
      }
    }
  });

  it('gives each scheduled function one period of its schedule', () => {
    for (const name of scheduleNames) {
      expect(timeoutOf(stack.scheduled[name].function)).toBe(300);
    }
  });

  it('refuses a provisioning timeout that the execution timeout would cut short', () => {
    expect(() => synthesize('dev', { provisionTimeoutSeconds: '1200' })).toThrow(
      'context provisionTimeoutSeconds must be at most 900 (half the provision execution timeout)',
    );
  });
});
