import type { Deps } from '../../shared/domain/deps';
import type { EntryHandler } from '../../shared/wiring/entry';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { StateMachine, type RunOptions } from 'aws-local-stepfunctions';
import type { WorkflowName } from '../../shared/workflow-names';
import { workflows } from '../workflows';
import { localArn, localStateMachineArn } from './handler-env';

/**
 * A local Step Functions endpoint speaking the service's JSON 1.0 protocol (StartExecution, DescribeExecution,
 * StopExecution: what the service calls). It runs the same `statemachines/*.asl.json` with
 * aws-local-stepfunctions, binding each `${Key}` Task resource to the handler module the CDK stack deploys for it.
 *
 * Fault switch: `fault(operation, fault)` makes every later request for that operation meet the fault instead of
 * being carried out — an error answer with the given HTTP status (`{ status: 503 }` answers `ServiceUnavailable`
 * unless `type` names another error), or the connection reset (`{ reset: true }`) — until `fault(operation,
 * undefined)` switches it off. Executions already running are untouched; a restart of the endpoint starts with none.
 */
const localFunctionArn = (key: string) => localArn('lambda', `function:${key}`);

type TaskHandlers = NonNullable<NonNullable<RunOptions['overrides']>['taskResourceLocalHandlers']>;
type TaskHandler = TaskHandlers[string];
/** The part of aws-local-stepfunctions' event log we keep: enough for the history and transition counts. */
type EventLog = { type: string; timestamp: number; state?: { name: string; type: string } };

type Status = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'ABORTED';

interface Execution {
  readonly executionArn: string;
  readonly stateMachineArn: string;
  readonly name: string;
  readonly input: string;
  readonly startDate: number;
  status: Status;
  stopDate?: number;
  output?: string;
  error?: string;
  cause?: string;
  readonly events: EventLog[];
  abort(): void;
  readonly done: Promise<void>;
}

interface LoadedMachine {
  readonly machine: StateMachine;
  readonly taskHandlers: TaskHandlers;
  readonly waitOverrides: Record<string, number>;
  readonly retryOverrides: Record<string, number>;
}

export interface LocalStepFunctionsOptions {
  readonly root: string;
  readonly port?: number;
  /** Every Wait state lasts this long locally (ms). */
  readonly waitMs: number;
  /**
   * Instead of `waitMs`: each Wait state lasts its own `Seconds` multiplied by this (0.01: 40 s become 400 ms); a
   * Wait that reads its length from the input (`SecondsPath`, as resize's one loop does) still lasts `waitMs`.
   */
  readonly waitScale?: number;
  /** Every retry pause lasts this long locally (ms). */
  readonly retryMs: number;
  /**
   * Runs around each Task invocation, given the task's input (the benchmarks record DynamoDB calls and durations per
   * step this way; tests inject failures).
   */
  readonly aroundTask?: <T>(workflow: WorkflowName, stateName: string, invoke: () => Promise<T>, input: unknown) => Promise<T>;
  /** The runtime whose dependencies the steps run with (awaited at each step: they may be built after the endpoint). */
  readonly deps: () => Promise<Deps>;
}

/** What a request meets instead of its operation (see the fault switch above). */
export type EndpointFault = { readonly status: number; readonly type?: string } | { readonly reset: true };

export interface LocalStepFunctions {
  readonly endpoint: string;
  /** Sets the fault every later request for `operation` meets, or switches it off (undefined). */
  fault(operation: string, fault: EndpointFault | undefined): void;
  /** Starts an execution, as StartExecution does (what EventBridge Scheduler calls on AWS); its ARN. */
  start(workflow: WorkflowName, input?: Record<string, unknown>, name?: string): string;
  readonly executions: ReadonlyMap<string, Execution>;
  /** Resolves when no execution is running. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

type AslState = {
  Type: string;
  Resource?: string;
  Seconds?: number;
  ItemProcessor?: { States: Record<string, AslState> };
  Iterator?: { States: Record<string, AslState> };
  Branches?: { States: Record<string, AslState> }[];
};

/** Every state of a definition by name, those inside Map item processors and Parallel branches included. */
export function everyState(states: Record<string, AslState>): [string, AslState][] {
  return Object.entries(states).flatMap(([name, state]) => [
    [name, state] as [string, AslState],
    ...[state.ItemProcessor, state.Iterator, ...(state.Branches ?? [])].flatMap((inner) => (inner ? everyState(inner.States) : [])),
  ]);
}

/**
 * aws-local-stepfunctions keeps no per-state context: here `$$.State.EnteredTime` reads the clock when a state
 * evaluates it, which for a Pass state (where the state machines read it) is the moment it was entered.
 */
export const localStateContext = {
  get EnteredTime() {
    return new Date().toISOString();
  },
};

async function loadMachine(root: string, name: WorkflowName, options: LocalStepFunctionsOptions): Promise<LoadedMachine> {
  const workflow = workflows[name];
  const raw = readFileSync(resolve(root, workflow.definitionFile), 'utf8');
  const states = (JSON.parse(raw) as { States: Record<string, AslState> }).States;
  const taskHandlers: TaskHandlers = {};
  const waitOverrides: Record<string, number> = {};
  const retryOverrides: Record<string, number> = {};
  // aws-local-stepfunctions looks its overrides up by state name, nested states too: names are unique per definition.
  for (const [stateName, state] of everyState(states)) {
    if (state.Type === 'Wait') {
      waitOverrides[stateName] =
        options.waitScale !== undefined && state.Seconds !== undefined
          ? Math.round(state.Seconds * 1000 * options.waitScale)
          : options.waitMs;
    }
    if (state.Type !== 'Task') continue;
    retryOverrides[stateName] = options.retryMs;
    const key = /^\$\{(\w+)\}$/.exec(state.Resource ?? '')?.[1];
    const step = key ? (workflow.steps as Record<string, { entry: string }>)[key] : undefined;
    if (!step) throw new Error(`${workflow.definitionFile}: state ${stateName} has no step for ${state.Resource}`);
    const module = (await import(pathToFileURL(resolve(root, step.entry)).href)) as { handler: EntryHandler<TaskHandler> };
    const run: TaskHandler = async (input) => module.handler.forRuntime(await options.deps())(input);
    const around = options.aroundTask;
    taskHandlers[stateName] = around ? (input) => around(name, stateName, async () => run(input), input) : run;
  }
  const definition = JSON.parse(raw.replace(/\$\{(\w+)\}/g, (_, key: string) => localFunctionArn(key)));
  return { machine: new StateMachine(definition), taskHandlers, waitOverrides, retryOverrides };
}

class ServiceError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>) : {};
}

const epochSeconds = (ms: number) => ms / 1000;

export async function startLocalStepFunctions(options: LocalStepFunctionsOptions): Promise<LocalStepFunctions> {
  const machines = new Map<string, LoadedMachine>();
  for (const name of Object.keys(workflows) as WorkflowName[]) {
    machines.set(localStateMachineArn(name), await loadMachine(options.root, name, options));
  }
  const executions = new Map<string, Execution>();

  function start(body: Record<string, unknown>) {
    const stateMachineArn = String(body.stateMachineArn);
    const loaded = machines.get(stateMachineArn);
    if (!loaded) throw new ServiceError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${stateMachineArn}'`);
    const name = typeof body.name === 'string' ? body.name : crypto.randomUUID();
    const executionArn = stateMachineArn.replace(':stateMachine:', ':execution:') + `:${name}`;
    const existing = executions.get(executionArn);
    if (existing) {
      if (existing.input === String(body.input ?? '{}')) return { executionArn, startDate: epochSeconds(existing.startDate) };
      throw new ServiceError('ExecutionAlreadyExists', `Execution Already Exists: '${executionArn}'`);
    }
    const input = String(body.input ?? '{}');
    const startDate = Date.now();
    const run = loaded.machine.run(JSON.parse(input), {
      overrides: {
        taskResourceLocalHandlers: loaded.taskHandlers,
        waitTimeOverrides: loaded.waitOverrides,
        retryIntervalOverrides: loaded.retryOverrides,
      },
      noThrowOnAbort: true,
      context: {
        Execution: { Id: executionArn, Name: name, Input: JSON.parse(input), StartTime: new Date(startDate).toISOString() },
        StateMachine: { Id: stateMachineArn, Name: stateMachineArn.split(':').pop() },
        State: localStateContext,
      },
    });
    const events: EventLog[] = [];
    void (async () => {
      for await (const event of run.eventLogs) events.push(event);
    })().catch(() => undefined);
    const execution: Execution = {
      executionArn,
      stateMachineArn,
      name,
      input,
      startDate,
      status: 'RUNNING',
      events,
      abort: () => run.abort(),
      done: run.result.then(
        (output: unknown) => {
          if (execution.status !== 'RUNNING') return;
          execution.status = 'SUCCEEDED';
          execution.output = JSON.stringify(output ?? null);
          execution.stopDate = Date.now();
        },
        (failure: Error) => {
          if (execution.status !== 'RUNNING') return;
          // The library wraps the state's error (a Fail state's Error and Cause, or an uncaught task error).
          const error = failure.cause instanceof Error ? failure.cause : failure;
          execution.status = 'FAILED';
          execution.error = error.name;
          execution.cause = error.message;
          execution.stopDate = Date.now();
        },
      ),
    };
    executions.set(executionArn, execution);
    return { executionArn, startDate: epochSeconds(startDate) };
  }

  function find(body: Record<string, unknown>): Execution {
    const execution = executions.get(String(body.executionArn));
    if (!execution) throw new ServiceError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(body.executionArn)}'`);
    return execution;
  }

  const describe = (e: Execution) => ({
    executionArn: e.executionArn,
    stateMachineArn: e.stateMachineArn,
    name: e.name,
    status: e.status,
    startDate: epochSeconds(e.startDate),
    ...(e.stopDate ? { stopDate: epochSeconds(e.stopDate) } : {}),
    input: e.input,
    ...(e.output !== undefined ? { output: e.output } : {}),
    ...(e.error !== undefined ? { error: e.error, cause: e.cause } : {}),
  });

  const operations: Record<string, (body: Record<string, unknown>) => unknown> = {
    StartExecution: start,
    DescribeExecution: (body) => describe(find(body)),
    StopExecution: (body) => {
      const execution = find(body);
      if (execution.status === 'RUNNING') {
        execution.status = 'ABORTED';
        execution.stopDate = Date.now();
        execution.abort();
      }
      return { stopDate: epochSeconds(execution.stopDate ?? Date.now()) };
    },
  };

  const faults = new Map<string, EndpointFault>();

  const server: Server = createServer((request, response) => {
    const operation =
      String(request.headers['x-amz-target'] ?? '')
        .split('.')
        .pop() ?? '';
    const fault = faults.get(operation);
    if (fault && 'reset' in fault) {
      request.socket.resetAndDestroy();
      return;
    }
    readJson(request)
      .then((body) => {
        if (fault) throw new ServiceError(fault.type ?? 'ServiceUnavailable', `${operation} refused by the fault switch`, fault.status);
        const handler = operations[operation];
        if (!handler) throw new ServiceError('UnknownOperationException', `Unknown operation ${operation}`);
        const result = JSON.stringify(handler(body));
        response.writeHead(200, { 'Content-Type': 'application/x-amz-json-1.0' });
        response.end(result);
      })
      .catch((error: unknown) => {
        const type = error instanceof ServiceError ? error.type : 'InternalFailure';
        response.writeHead(error instanceof ServiceError ? error.status : 500, {
          'Content-Type': 'application/x-amz-json-1.0',
          'x-amzn-ErrorType': type,
        });
        response.end(JSON.stringify({ __type: type, message: error instanceof Error ? error.message : String(error) }));
      });
  });
  await new Promise<void>((ready) => server.listen(options.port ?? 0, '127.0.0.1', ready));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    fault(operation, fault) {
      if (fault) faults.set(operation, fault);
      else faults.delete(operation);
    },
    start: (workflow, input = {}, name) =>
      start({ stateMachineArn: localStateMachineArn(workflow), input: JSON.stringify(input), ...(name ? { name } : {}) }).executionArn,
    executions,
    async idle() {
      await Promise.all([...executions.values()].map((e) => e.done));
    },
    async close() {
      for (const execution of executions.values()) if (execution.status === 'RUNNING') execution.abort();
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}
