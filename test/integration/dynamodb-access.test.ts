import type { EntryHandler } from '../../shared/wiring/entry';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { installDynamoCallRecorder, recordDynamoCalls, type DynamoCall } from '../../bench/dynamo-calls';
import { openSession } from '../../shared/domain/accounts';
import { generateApiKey } from '../../shared/model/api-keys';
import { grantedAccess } from '../../infra/constructs/api-function';
import { mergeAccess } from '../../shared/access';
import type { FunctionAccess } from '../../shared/access';
import { routeAuthAccess, routes } from '../../shared/routes';
import { repositoryRoot } from '../../infra/local/runtime';
import { scheduleNames, schedules } from '../../infra/schedules';
import { everyState } from '../../infra/local/step-functions';
import { tableNames, type TableName } from '../../shared/tables';
import type { WorkflowName } from '../../shared/workflow-names';
import { workflows } from '../../infra/workflows';
import { useTestRuntime } from '../support/runtime';

/** The DynamoDB operations each function made, per table, as `table:Operation`. */
const observed = new Map<string, Set<string>>();

function record(functionName: string, calls: DynamoCall[]) {
  const seen = observed.get(functionName) ?? new Set<string>();
  for (const call of calls) for (const { operation, table } of call.touches) seen.add(`${table}:${operation}`);
  observed.set(functionName, seen);
}

async function recorded<T>(functionName: string, invoke: () => Promise<T>): Promise<T> {
  const calls: DynamoCall[] = [];
  try {
    return await recordDynamoCalls(calls, invoke);
  } finally {
    record(functionName, calls);
  }
}

/** Each workflow state's step key, from the ASL files, so that a task is recorded under its function. */
const stepKeyOf = (workflow: WorkflowName, stateName: string): string => {
  const states = new Map(everyState(JSON.parse(readFileSync(resolve(repositoryRoot, workflows[workflow].definitionFile), 'utf8')).States));
  return /^\$\{(\w+)\}$/.exec(states.get(stateName)?.Resource ?? '')?.[1] ?? stateName;
};

const runtime = useTestRuntime({
  aroundInvocation: (route, invoke) => recorded(route.name, invoke),
  aroundTask: (workflow, stateName, invoke) => recorded(`${workflow}.${stepKeyOf(workflow, stateName)}`, invoke),
});
beforeAll(() => installDynamoCallRecorder(runtime.deps));

/** What each function declares, in the same `table:Operation` terms. */
function declaredOperations(): Map<string, Set<string>> {
  const physical = (table: TableName) => runtime.tableNames[table];
  // Calling the upstream brings the request budget's access with it, as the function construct grants it.
  const flatten = (declared: FunctionAccess) => {
    const access = grantedAccess(declared);
    return new Set(tableNames.flatMap((table) => (access.tables?.[table] ?? []).map((operation) => `${physical(table)}:${operation}`)));
  };
  return new Map([
    ...routes.map((route) => [route.name, flatten(mergeAccess(route.access, routeAuthAccess(route)))] as const),
    ...(Object.keys(workflows) as WorkflowName[]).flatMap((workflow) =>
      Object.entries(workflows[workflow].steps).map(([key, step]) => [`${workflow}.${key}`, flatten(step.access)] as const),
    ),
    ...scheduleNames.map((name) => [name, flatten(schedules[name].access)] as const),
  ]);
}

describe('declared DynamoDB access', () => {
  it('covers every operation each function makes while every route, workflow and scheduled job runs', async () => {
    const { accountId, apiKey, keyId } = await runtime.newAccount();
    const { session, csrfToken } = await openSession(runtime.deps, accountId);
    const page = { cookie: `session=${session}`, 'x-csrftoken': csrfToken, origin: `http://${new URL(runtime.baseUrl).host}` };
    const created = await runtime.call('POST', '/api/v1/keys', { body: { name: 'walk' }, headers: page });
    await runtime.call('GET', '/api/v1/keys', { headers: { cookie: page.cookie } });
    const instance = await runtime.activeInstance(apiKey);
    const path = `/api/v1/instances/${instance.instance_id}`;
    for (const body of [{ type: 'power_off' }, { type: 'power_on' }, { type: 'reboot' }, { type: 'resize', flavor: 's-2vcpu-4gb' }]) {
      const action = await runtime.call('POST', `${path}/actions`, { apiKey, body, headers: { 'idempotency-key': body.type } });
      await runtime.waitForJob(apiKey, action.body.job_id);
    }
    await runtime.call('GET', '/api/v1/instances', { apiKey });
    await runtime.simulator.control.faults({ fail_creates: true });
    const failing = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'fails', flavor: 's-1vcpu-2gb' } });
    await runtime.waitForStatus(apiKey, failing.body.instance_id, ['failed']);
    await runtime.simulator.control.faults({ fail_creates: false });
    const deleted = await runtime.call('DELETE', path, { apiKey });
    await runtime.waitForJob(apiKey, deleted.body.job_id);
    // Failed authentications are counted per source address.
    await runtime.call('GET', '/api/v1/instances', { apiKey: generateApiKey().fullKey });
    await runtime.call('GET', '/api/v1/keys', { headers: { cookie: 'session=forged' } });
    await runtime.call('GET', '/api/v1/openapi.json');
    await runtime.call('GET', '/api/v1/nowhere');
    for (const name of scheduleNames) {
      const module = (await import(resolve(repositoryRoot, schedules[name].entry))) as { handler: EntryHandler<() => Promise<unknown>> };
      await recorded(name, () => module.handler.forRuntime(runtime.deps)());
    }
    await runtime.call('DELETE', `/api/v1/keys/${created.body.id}`, { headers: page });
    await runtime.call('DELETE', `/api/v1/keys/${keyId}`, { headers: page });
    await runtime.stepFunctions.idle();

    const declared = declaredOperations();
    const undeclared = [...observed].flatMap(([name, operations]) =>
      [...operations].filter((operation) => !declared.get(name)?.has(operation)).map((operation) => `${name} ${operation}`),
    );

    expect(observed.size).toBeGreaterThan(15);
    expect(observed.get('reviews')?.size).toBeGreaterThan(0);
    expect(undeclared).toEqual([]);
    // A whole walk of the service: more than the default minute on a busy machine.
  }, 240_000);
});
