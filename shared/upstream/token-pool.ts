import { UpstreamBudgetSpentError, type CreateServerRequest, type UpstreamActionRequest, type UpstreamDriver } from './driver';
import { type UpstreamAction, type UpstreamActionRecord, type UpstreamServer } from '../model/server';

/**
 * Several upstream tokens of one account, as one driver: each has its own rate limit (DigitalOcean counts 5,000
 * requests an hour per token) and its own share of the request budget. Calls take turns over the tokens; a call
 * whose token's budget is spent (nothing was sent) goes to the next one, and only when every token's is spent is it
 * refused. Every token reaches every server of the account, so a server's calls may use any of them.
 */
function counter(): () => number {
  let turn = 0;
  return () => turn++;
}

export class TokenPoolDriver implements UpstreamDriver {
  /**
   * @param nextTurn the turns taken so far, counted across the pools of one runtime (a pool may serve one invocation
   *   only); by default this pool's own count.
   */
  constructor(
    private readonly drivers: readonly UpstreamDriver[],
    private readonly nextTurn: () => number = counter(),
  ) {
    if (drivers.length === 0) throw new Error('a token pool needs at least one token');
  }

  /** The drivers in the order this call tries them: each call starts one further on. */
  private rotation(): UpstreamDriver[] {
    const first = this.nextTurn() % this.drivers.length;
    return [...this.drivers.slice(first), ...this.drivers.slice(0, first)];
  }

  private async spread<T>(call: (driver: UpstreamDriver) => Promise<T>): Promise<T> {
    let refusal: UpstreamBudgetSpentError | undefined;
    for (const driver of this.rotation()) {
      try {
        return await call(driver);
      } catch (error) {
        if (!(error instanceof UpstreamBudgetSpentError)) throw error;
        refusal = error;
      }
    }
    throw refusal;
  }

  listServersByTag(tag: string): Promise<UpstreamServer[]> {
    return this.spread((driver) => driver.listServersByTag(tag));
  }

  /** A sweep over the fleet stays on one token: its pages are one listing. */
  serverPagesByTag(tag: string): AsyncGenerator<UpstreamServer[]> {
    const [driver] = this.rotation();
    if (!driver) throw new Error('a token pool needs at least one token');
    return driver.serverPagesByTag(tag);
  }

  serverPageByTag(tag: string, page: number): Promise<{ servers: UpstreamServer[]; more: boolean }> {
    return this.spread((driver) => driver.serverPageByTag(tag, page));
  }

  createServer(request: CreateServerRequest): Promise<UpstreamServer> {
    return this.spread((driver) => driver.createServer(request));
  }

  getServer(id: number): Promise<UpstreamServer | null> {
    return this.spread((driver) => driver.getServer(id));
  }

  deleteServer(id: number): Promise<void> {
    return this.spread((driver) => driver.deleteServer(id));
  }

  startAction(serverId: number, action: UpstreamActionRequest): Promise<UpstreamAction> {
    return this.spread((driver) => driver.startAction(serverId, action));
  }

  getAction(actionId: number): Promise<UpstreamAction> {
    return this.spread((driver) => driver.getAction(actionId));
  }

  listActions(serverId: number): Promise<UpstreamActionRecord[]> {
    return this.spread((driver) => driver.listActions(serverId));
  }
}
