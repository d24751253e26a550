import { loadConfig, type Environment } from '../../shared/config';
import type { Deps } from '../../shared/domain/deps';
import { randomIds, RuntimeState, systemClock } from '../../shared/platform';
import type { DeliveryMessage } from '../../shared/events/ports';
import type { MailMessage } from '../../shared/mail';
import type { Job } from '../../shared/model/job';
import type { AuthMailRequest } from '../../shared/schemas/auth';
import type { ServiceEvent } from '../../shared/schemas/events';
import { tableNames, tables, type TableName } from '../../shared/tables';
import { workflowEnvVars, workflowNames, type WorkflowName } from '../../shared/workflow-names';
import { MemoryDynamo } from './memory-dynamo';

/** A dependency the unit tier does not reach: any use fails the test, naming it. */
function unreachable<T>(name: string): T {
  return new Proxy({} as object, {
    get: (_, property) => {
      throw new Error(`the unit tier reaches no ${name} (${String(property)} was asked for)`);
    },
  }) as T;
}

/** A runtime's dependencies configured from `env` alone: no AWS client, engine or transport is reachable. */
export function unitDeps(env: Environment = {}): Deps {
  return {
    config: loadConfig(env),
    dynamo: unreachable('DynamoDB'),
    clock: systemClock,
    ids: randomIds,
    state: new RuntimeState(),
    workflows: unreachable('workflow engine'),
    transports: unreachable('event transport'),
    mail: unreachable('mailer'),
    payments: unreachable('payment provider'),
    ssh: unreachable('SSH probe'),
  };
}

/** What the in-memory runtime's fakes were asked to do. */
export interface FakeRecord {
  /** Workflows started: the workflow, the job and its input. */
  readonly started: { workflow: WorkflowName; job: Job; input: Record<string, unknown> }[];
  /** Jobs whose workflow was stopped. */
  readonly stopped: Job[];
  readonly published: ServiceEvent[];
  readonly deliveries: DeliveryMessage[];
  readonly authMails: AuthMailRequest[];
  readonly mails: MailMessage[];
}

/**
 * A runtime's dependencies in memory: DynamoDB (test/support/memory-dynamo.ts) with every table, a workflow engine
 * that records what it is asked to start and stop (nothing runs), and transports that keep what they are handed; the
 * system's clock and ids unless others are given.
 */
export function memoryDeps(env: Environment = {}, runtime: Partial<Pick<Deps, 'clock' | 'ids'>> = {}): { deps: Deps; record: FakeRecord } {
  const names = Object.fromEntries(tableNames.map((table) => [table, `mem-${table}`])) as Record<TableName, string>;
  const config = loadConfig({
    ...Object.fromEntries(tableNames.map((table) => [tables[table].envVar, names[table]])),
    ...Object.fromEntries(
      workflowNames.map((workflow) => [workflowEnvVars[workflow], `arn:aws:states:us-east-1:000000000000:stateMachine:${workflow}`]),
    ),
    ...env,
  });
  const record: FakeRecord = { started: [], stopped: [], published: [], deliveries: [], authMails: [], mails: [] };
  const running = new Set<string>();
  const deps: Deps = {
    config,
    dynamo: new MemoryDynamo(names).asClient(),
    clock: runtime.clock ?? systemClock,
    ids: runtime.ids ?? randomIds,
    state: new RuntimeState(),
    workflows: {
      async start(workflow, job, input) {
        record.started.push({ workflow, job, input });
        running.add(job.job_id);
      },
      async execution(job) {
        if (running.has(job.job_id)) return 'running';
        return record.started.some((started) => started.job.job_id === job.job_id) ? 'ended' : 'absent';
      },
      async stop(job) {
        record.stopped.push(job);
        running.delete(job.job_id);
      },
    },
    transports: {
      events: { publish: async (events) => void record.published.push(...events) },
      deliveries: { send: async (message) => void record.deliveries.push(message) },
      authMail: { send: async (message) => void record.authMails.push(message) },
    },
    mail: { send: async (message) => void record.mails.push(message) },
    payments: unreachable('payment provider'),
    // Every server answers SSH at once.
    ssh: { answers: async () => true },
  };
  return { deps, record };
}
