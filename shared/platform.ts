import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Config } from './config';
import { tables, type TableName } from './tables';
import { workflowEnvVars, type WorkflowName } from './workflow-names';

/**
 * What one runtime owns below its use cases: its configuration, its AWS clients and the state it keeps between
 * invocations (caches such as reserved counter blocks or the last view of the request budget). Built once by the
 * runtime's wiring (shared/wiring/aws.ts on AWS, the local runtime's own) and passed to every store and adapter; two
 * runtimes in one process each have their own.
 */
export interface Platform {
  readonly config: Config;
  readonly dynamo: DynamoDBDocumentClient;
  /** The runtime's clock: what time it is now. */
  readonly clock: Clock;
  /** The runtime's source of fresh identifiers (job ids, ledger entries, event ids). */
  readonly ids: Ids;
  /** The runtime's state between invocations, one value per slot (see runtimeSlot). */
  readonly state: RuntimeState;
  /** What the entry point knows of the invocation the work runs for (none for work outside one: tools, tests). */
  readonly invocation?: Invocation;
}

/**
 * The credentials a request was authenticated with. While a Bearer request runs, its dependencies carry them: its
 * writes carry conditions that the key is still active and its account in standing, and its reads check them again,
 * so that a key revoked (or an account suspended) mid-request stops the request there: revocation applies to
 * requests in flight.
 */
export interface RequestGuard {
  readonly keyHash: string;
  readonly accountId: string;
}

/** The invocation a piece of work runs for, as its entry point hands it in (see deadline.ts and request-guard.ts). */
interface Invocation {
  /** When the work must be done by (epoch ms): the function's cut-off less the reserve it keeps. */
  readonly deadline?: number;
  /** Aborted once a route answered without waiting for its work. */
  readonly signal?: AbortSignal;
  /** The credentials of the Bearer request the work runs for. */
  readonly guard?: RequestGuard;
}

export interface Clock {
  now(): Date;
}

export interface Ids {
  /** A random UUID (v4). */
  uuid(): string;
}

/** The system's clock and random UUIDs: what every runtime but a test's uses. */
export const systemClock: Clock = { now: () => new Date() };
export const randomIds: Ids = { uuid: () => randomUUID() };

/** Per-runtime values, each created on first use by its slot. */
export class RuntimeState {
  readonly #values = new Map<RuntimeSlot<unknown>, unknown>();

  get<T>(slot: RuntimeSlot<T>, platform: Platform): T {
    if (!this.#values.has(slot)) this.#values.set(slot, slot.create(platform));
    return this.#values.get(slot) as T;
  }
}

/** A kind of per-runtime state, declared by the module that keeps it; its value lives in each runtime's RuntimeState. */
export interface RuntimeSlot<T> {
  readonly create: (platform: Platform) => T;
  of(platform: Platform): T;
}

export function runtimeSlot<T>(create: (platform: Platform) => T): RuntimeSlot<T> {
  const slot: RuntimeSlot<T> = { create, of: (platform) => platform.state.get(slot, platform) };
  return slot;
}

/** The physical name of a table; fails loudly when the deployment forgot to wire it. */
export function tableName(deps: Platform, table: TableName): string {
  const name = deps.config.tableNames[table];
  if (!name) throw new Error(`${tables[table].envVar} is not set`);
  return name;
}

export function stateMachineArn(deps: Platform, workflow: WorkflowName): string {
  const arn = deps.config.stateMachineArns[workflow];
  if (!arn) throw new Error(`${workflowEnvVars[workflow]} is not set`);
  return arn;
}
