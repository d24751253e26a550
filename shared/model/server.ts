/** What the upstream compute API reports of a server and of its actions: the facts the model decides on. */
type UpstreamServerStatus = 'new' | 'active' | 'off' | 'archive';

export interface UpstreamServer {
  readonly id: number;
  readonly name: string;
  readonly status: UpstreamServerStatus;
  /** Public IPv4 address, once the server has one. */
  readonly ipv4: string | null;
  readonly sizeSlug: string;
  readonly diskGb: number;
  readonly tags: readonly string[];
}

type UpstreamActionStatus = 'in-progress' | 'completed' | 'errored';

export interface UpstreamAction {
  readonly id: number;
  readonly type: string;
  readonly status: UpstreamActionStatus;
}

/** An action as the droplet's action list shows it: when it started, by the upstream's clock (seconds precision). */
export interface UpstreamActionRecord extends UpstreamAction {
  readonly startedAt: string;
}
