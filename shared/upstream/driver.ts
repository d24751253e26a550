import type { UpstreamAction, UpstreamActionRecord, UpstreamServer } from '../model/server';

/**
 * The upstream compute API as the workflows see it. The production implementation speaks DigitalOcean API v2
 * (`digitalocean.ts`); the local simulator serves the same HTTP subset, so this driver runs for real everywhere.
 */
export interface CreateServerRequest {
  readonly name: string;
  /** Tags for the server: ours mark it as the service's and as one instance's (which makes creation idempotent). */
  readonly tags: readonly string[];
  readonly size: string;
  readonly image: string;
  readonly userData: string;
}

export type UpstreamActionRequest =
  | { readonly type: 'power_on' | 'power_off' | 'shutdown' | 'reboot' }
  | { readonly type: 'resize'; readonly size: string; readonly disk: true };

export interface UpstreamDriver {
  /** Servers carrying the tag (all pages). */
  listServersByTag(tag: string): Promise<UpstreamServer[]>;
  /** Servers carrying the tag a page at a time, however many pages: for sweeps over the whole fleet. */
  serverPagesByTag(tag: string): AsyncGenerator<UpstreamServer[]>;
  /** One page (numbered from 1) of the servers carrying the tag, and whether more follow: for sweeps resumed across runs. */
  serverPageByTag(tag: string, page: number): Promise<{ servers: UpstreamServer[]; more: boolean }>;
  createServer(request: CreateServerRequest): Promise<UpstreamServer>;
  /** The server, or null when the upstream no longer knows it (404). */
  getServer(id: number): Promise<UpstreamServer | null>;
  /** Destroys the server; an upstream 404 counts as done. */
  deleteServer(id: number): Promise<void>;
  startAction(serverId: number, action: UpstreamActionRequest): Promise<UpstreamAction>;
  getAction(actionId: number): Promise<UpstreamAction>;
  /** The server's actions (all pages), whatever started them: how a call whose answer was lost is found out. */
  listActions(serverId: number): Promise<UpstreamActionRecord[]>;
}

/** 5xx, 429, timeouts and network failures: worth retrying. The name is what Step Functions Retry matches. */
export class UpstreamTransientError extends Error {
  override readonly name = 'UpstreamTransientError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * A call the driver did not start because the invocation would be cut off before it could finish: nothing was
 * sent, so it is as safe to retry as any transient error (and keeps that name for the state machines' Retry).
 */
export class UpstreamDeadlineError extends UpstreamTransientError {}

/**
 * A call the driver did not send because the shared upstream request budget does not allow its priority now:
 * nothing was sent; retried like any transient error.
 */
export class UpstreamBudgetSpentError extends UpstreamTransientError {}

/** Any other refusal (4xx): retrying will not help. */
export class UpstreamPermanentError extends Error {
  override readonly name: string = 'UpstreamPermanentError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** A refusal for want of room upstream (the size unavailable, the server limit reached): permanent for this request. */
export class UpstreamCapacityError extends UpstreamPermanentError {
  override readonly name: string = 'UpstreamCapacityError';
}
