import type { Deps } from './deps';
import type { Instance } from '../model/instance';

/**
 * Where a running server's SSH stands, since `since` (when the upstream first reported it running): it answers; not
 * yet, to be probed again after `wait_seconds`; or not within the wait (`SSH_WAIT_SECONDS`).
 */
export type SshReadiness =
  | { readonly kind: 'answered' }
  | { readonly kind: 'waiting'; readonly wait_seconds: number }
  | { readonly kind: 'timed_out'; readonly waited_seconds: number };

/** Backoff between probes: 2 s at first, then half the time waited so far, at most 15 s. */
const probeDelaySeconds = (waitedSeconds: number) => Math.min(15, Math.max(2, Math.round(waitedSeconds / 2)));

/** One probe of the instance's SSH (no upstream call): what makes a running server `active`. */
export async function sshReadiness(deps: Deps, instance: Pick<Instance, 'ipv4' | 'ssh_port'>, since: string): Promise<SshReadiness> {
  if (instance.ipv4 !== null && (await deps.ssh.answers(instance.ipv4, instance.ssh_port))) return { kind: 'answered' };
  const waitedSeconds = (deps.clock.now().getTime() - Date.parse(since)) / 1000;
  return waitedSeconds > deps.config.ssh.waitSeconds
    ? { kind: 'timed_out', waited_seconds: Math.round(waitedSeconds) }
    : { kind: 'waiting', wait_seconds: probeDelaySeconds(waitedSeconds) };
}
