import * as z from '../model/zod';
import { getInstanceRoute } from '../contracts/instances';
import type { Instance } from '../model/instance';
import { instanceStatusSchema, type InstanceStatus } from '../model/instance-status';
import { failureView } from '../schemas/failure';
import type { RouteAnswer, RouteCall } from './route-calls';

/** What a wait can wait for. */
const targets = ['active', 'stopped', 'deleted'] as const;
type Target = (typeof targets)[number];

/**
 * API Gateway answers within 30 s: a wait ends well before, and the agent calls again if it must. 20 s keeps the
 * slowest MCP request under 80 % of its function's timeout, where the duration alarm would call it one bad day away.
 */
const WAIT_MAX_SECONDS = 20;

export const waitInputSchema = z.object({
  instance_id: z.number().int().positive().meta({ description: 'The instance id.' }),
  until: z.enum(targets).default('active').meta({ description: 'active (SSH answers), stopped or deleted.' }),
  timeout_s: z.number().int().min(1).max(WAIT_MAX_SECONDS).default(WAIT_MAX_SECONDS),
});

export const waitResultSchema = z.object({
  instance_id: z.number().int(),
  status: z.union([instanceStatusSchema, z.literal('deleted')]).meta({ description: 'The status, or deleted.' }),
  reached: z.boolean(),
  waited_s: z.number(),
  ipv4: z.string().nullable(),
  ssh_port: z.number().int().nullable(),
  failure: failureView,
});
type WaitResult = z.infer<typeof waitResultSchema>;

/** What a wait needs besides the route: the stored instance (as its caller may still see it), time and progress. */
export interface Waiting {
  call(route: RouteCall): Promise<RouteAnswer>;
  /** The caller's live instance as stored, checking that the caller's key still holds; undefined once it is gone. */
  readInstance(instanceId: number): Promise<Instance | undefined>;
  /** Milliseconds since some fixed moment. */
  now(): number;
  /** Milliseconds the request may still wait before it must answer. */
  remainingMs(): number;
  sleep(ms: number): Promise<void>;
  /** Tells the client how far the wait is, when it asked to hear (a progress token). */
  progress(elapsedSeconds: number, totalSeconds: number, message: string): Promise<void>;
}

/** Statuses from which the target is not reached without another action. */
const dead: readonly InstanceStatus[] = ['failed', 'deleting', 'destroyed', 'quarantined'];
/** Pauses between reads: soon at first (a power action takes seconds), then every 3 s. */
const PAUSES_MS = [1_000, 1_000, 2_000, 2_000, 3_000];
/** Kept for the answer itself once the wait ends. */
const ANSWER_RESERVE_MS = 2_000;

type Seen = Pick<Instance, 'instance_id' | 'status' | 'ipv4' | 'ssh_port'> & {
  failure?: Instance['failure'];
  active_job_id?: string | null;
};

/** Whether there is nothing more to wait for: the target reached, or out of its reach. */
function settled(seen: Seen, until: Target): boolean {
  if (seen.status === until) return true;
  if (dead.includes(seen.status)) return until !== 'deleted' || seen.status === 'failed';
  // Running or stopped with no job under way: it stays as it is until someone acts.
  return seen.active_job_id === null && (seen.status === 'active' || seen.status === 'stopped');
}

function resultOf(seen: Seen | 'deleted', instanceId: number, until: Target, waitedMs: number): WaitResult {
  const waited_s = Math.round(waitedMs / 100) / 10;
  if (seen === 'deleted')
    return { instance_id: instanceId, status: 'deleted', reached: until === 'deleted', waited_s, ipv4: null, ssh_port: null };
  return {
    instance_id: instanceId,
    status: seen.status,
    reached: seen.status === until,
    waited_s,
    ipv4: seen.ipv4,
    ssh_port: seen.ssh_port,
    ...(seen.status === 'failed' && seen.failure ? { failure: seen.failure } : {}),
  };
}

/**
 * Waits on the server's side until the instance reaches `until`, cannot, or the time is up. The first read is the
 * GetInstance route's (one request against the caller's limits, its 404 and texts); the next ones read the stored
 * instance (kept current by the workflows) with backoff, each checking that the caller's key still holds.
 */
export async function waitForInstance(
  { instance_id, until, timeout_s }: z.infer<typeof waitInputSchema>,
  io: Waiting,
): Promise<{ ok: true; value: WaitResult } | { ok: false; answer: RouteAnswer }> {
  const started = io.now();
  const deadline = started + Math.min(timeout_s * 1000, io.remainingMs() - ANSWER_RESERVE_MS);
  const first = await io.call({ contract: getInstanceRoute, pathParameters: { instance_id: String(instance_id) } });
  if (first.status === 404 && until === 'deleted') return { ok: true, value: resultOf('deleted', instance_id, until, 0) };
  if (first.status !== 200) return { ok: false, answer: first };
  let seen: Seen | 'deleted' = first.body as Seen;
  // The detail does not show whether a job is under way (settled then waits for the stored instance to say).
  if (settled(seen, until)) return { ok: true, value: resultOf(seen, instance_id, until, 0) };
  for (let round = 0; ; round += 1) {
    const pause = PAUSES_MS[Math.min(round, PAUSES_MS.length - 1)]!;
    if (io.now() + pause > deadline) break;
    await io.progress(Math.round((io.now() - started) / 1000), timeout_s, `${instance_id} is ${seen.status}`);
    await io.sleep(pause);
    seen = (await io.readInstance(instance_id)) ?? 'deleted';
    if (seen === 'deleted' || settled(seen, until)) break;
  }
  return { ok: true, value: resultOf(seen, instance_id, until, io.now() - started) };
}
