import { runtimeSlot, type Platform } from '../platform';
import { loadSecretsManager } from '../aws';
import { hasTimeFor } from '../deadline';
import type { Deps } from './deps';
import { DigitalOceanDriver } from '../upstream/digitalocean';
import { TokenPoolDriver } from '../upstream/token-pool';
import type { UpstreamDriver } from '../upstream/driver';
import type { BudgetSettings, UpstreamPriority } from '../model/upstream-budget';
import { holdUpstream, takeUpstreamTokens } from '../store/upstream-budget';

/**
 * The upstream tokens: given directly in the local runtime, read from Secrets Manager on AWS. Several tokens of one
 * account (for more calls than one token's limit) are written one per line, or separated by commas.
 */
async function readTokens(deps: Platform): Promise<string> {
  const { token: literal, tokenSecretArn } = deps.config.upstream;
  if (literal) return literal;
  if (!tokenSecretArn) throw new Error('neither UPSTREAM_TOKEN nor UPSTREAM_TOKEN_SECRET_ARN is set');
  // Loaded here, once per container: only this read on AWS needs the client.
  const { GetSecretValueCommand, SecretsManagerClient } = await loadSecretsManager();
  const secrets = new SecretsManagerClient({ region: deps.config.region });
  const { SecretString } = await secrets.send(new GetSecretValueCommand({ SecretId: tokenSecretArn }));
  if (!SecretString) throw new Error('the upstream token secret is empty');
  return SecretString;
}

export const tokensOf = (secret: string): string[] => secret.split(/[\s,]+/).filter(Boolean);

export interface TokenCache {
  /** The cached secret (the upstream tokens), read on first use (and again after a failed read). */
  current(): Promise<string>;
  /** After the upstream refused what `stale` held: the secret read anew, one read for all callers that saw the same. */
  reread(stale: string): Promise<string>;
}

/** Keeps the secret for the container's life, until the upstream refuses a token it holds. */
export function tokenCache(read: () => Promise<string>): TokenCache {
  let cached: Promise<string> | undefined;
  const current = () => {
    if (!cached) {
      const reading = read();
      cached = reading;
      reading.catch(() => {
        if (cached === reading) cached = undefined;
      });
    }
    return cached;
  };
  return {
    current,
    async reread(stale) {
      const held = cached;
      if (held && (await held.catch(() => undefined)) === stale && cached === held) cached = undefined;
      return current();
    },
  };
}

/** The runtime's upstream tokens, kept for its life (see tokenCache). */
const secret = runtimeSlot((deps) => tokenCache(() => readTokens(deps)));
/** Turns taken over the upstream tokens, counted across the runtime's calls so that they take turns. */
const turns = runtimeSlot(() => ({ taken: 0 }));

/**
 * After the upstream refused token number `slot`: that token as the secret holds it now, read anew unless another
 * caller already has (an operator may have replaced it).
 */
async function rereadToken(deps: Platform, slot: number, stale: string): Promise<string> {
  const held = await secret.of(deps).current();
  const current = tokensOf(held)[slot] ?? '';
  if (current !== stale) return current;
  return tokensOf(await secret.of(deps).reread(held))[slot] ?? '';
}

/** Calls whose budget was taken already, in one write on upstream token `slot`: they are sent on it first. */
interface PrepaidCalls {
  readonly slot: number;
  left: number;
}

const budgetOf = (deps: Deps): BudgetSettings => ({
  capacity: deps.config.upstream.budgetBurst,
  refillPerSecond: deps.config.upstream.budgetPerHour / 3600,
});

/** One driver over the configured tokens, its calls taking from each token's request budget at `priority`. */
export function tokenPool(
  deps: Deps,
  tokens: readonly string[],
  timeoutMs: number,
  priority: UpstreamPriority,
  prepaid?: PrepaidCalls,
): UpstreamDriver {
  const { baseUrl, pageSize } = deps.config.upstream;
  const budget = budgetOf(deps);
  const admit = (slot: number) => async () => {
    if (prepaid?.slot !== slot || prepaid.left === 0) return takeUpstreamTokens(deps, slot, priority, budget);
    prepaid.left -= 1;
    return true;
  };
  return new TokenPoolDriver(
    tokens.map(
      (token, slot) =>
        new DigitalOceanDriver({
          baseUrl,
          token,
          rereadToken: (stale) => rereadToken(deps, slot, stale),
          timeoutMs,
          hasTimeFor: (ms) => hasTimeFor(deps, ms),
          perPage: pageSize,
          admit: admit(slot),
          onThrottled: (untilMs) => holdUpstream(deps, slot, untilMs, budget),
        }),
    ),
    () => (prepaid && prepaid.left > 0 ? prepaid.slot : turns.of(deps).taken++),
  );
}

/**
 * A driver whose calls take from the shared request budget at `priority`, each bounded by `timeoutMs` and started
 * only while the invocation `deps` runs for has that long left. Made for each use: the tokens, the budget and the
 * turns over the tokens are the runtime's.
 */
async function driverFor(deps: Deps, timeoutMs: number, priority: UpstreamPriority, prepaidCalls = 0): Promise<UpstreamDriver> {
  const tokens = tokensOf(await secret.of(deps).current());
  if (prepaidCalls === 0 || tokens.length === 0) return tokenPool(deps, tokens, timeoutMs, priority);
  const slot = turns.of(deps).taken++ % tokens.length;
  const taken = await takeUpstreamTokens(deps, slot, priority, budgetOf(deps), { count: prepaidCalls, inOneRound: true });
  return tokenPool(deps, tokens, timeoutMs, priority, { slot, left: taken ? prepaidCalls : 0 });
}

/** The driver for workflow steps and actions, with the normal per-call timeout: first call on the budget. */
export const upstream = (deps: Deps) => driverFor(deps, deps.config.upstream.timeoutMs, 'workflow');

/**
 * The driver for calls made while a client waits (starting an action): bounded well within the API's timeout. With
 * `prepaidCalls`, that many calls' budget is taken at once, in one round, so that a request can take it beside its
 * own write instead of in a round of its own (a refused take leaves each call to take its own, and be refused).
 */
export const upstreamForRequests = (deps: Deps, prepaidCalls = 0) =>
  driverFor(deps, deps.config.upstream.requestTimeoutMs, 'workflow', prepaidCalls);

/** The driver for the fleet sweep: it leaves a fifth of the budget to lifecycles under way. */
export const upstreamForSweeps = (deps: Deps) => driverFor(deps, deps.config.upstream.timeoutMs, 'sweep');

/** The driver for reads made while a client waits for a quick answer (live status): only while half the budget is left. */
export const upstreamForLiveReads = (deps: Deps) => driverFor(deps, deps.config.upstream.liveStatusTimeoutMs, 'live');
