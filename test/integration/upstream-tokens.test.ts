import { UpstreamBudgetSpentError } from '../../shared/upstream/driver';
import { tokenPool, tokensOf } from '../../shared/domain/upstream';
import { useTestRuntime } from '../support/runtime';
import { setBudgetBucket } from '../support/upstream-budget';

/** Two tokens of one simulated account, each with a budget of 20 calls in a burst. */
const runtime = useTestRuntime({ upstreamTokens: 2, env: { UPSTREAM_BUDGET_BURST: '20', UPSTREAM_BUDGET_PER_HOUR: '3600' } });

const setBucket = (slot: number, tokens: number) => setBudgetBucket(runtime, slot, tokens);
const callsByToken = () => runtime.simulator.state().callsByToken;
const since = (before: number[]) => callsByToken().map((calls, slot) => calls - (before[slot] ?? 0));

describe('several upstream tokens', () => {
  beforeEach(async () => {
    await Promise.all([setBucket(0, 20), setBucket(1, 20)]);
  });

  it('reads every token of the secret, one per line or separated by commas', () => {
    expect(tokensOf('dop_v1_a,dop_v1_b\ndop_v1_c\n')).toEqual(['dop_v1_a', 'dop_v1_b', 'dop_v1_c']);
    expect(tokensOf('dop_v1_only')).toEqual(['dop_v1_only']);
  });

  it('spreads a lifecycle’s calls over both tokens', async () => {
    const before = callsByToken();
    const { apiKey } = await runtime.newAccount();

    await runtime.activeInstance(apiKey);
    const [first, second] = since(before);

    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(0);
  });

  it('sends on the other token while one token’s budget is spent for the call’s priority', async () => {
    const pool = tokenPool(runtime.deps, tokensOf(runtime.upstreamToken), 2_000, 'sweep');
    await setBucket(0, 0);
    const before = callsByToken();

    const servers = await Promise.all([1, 2, 3, 4].map(() => pool.listServersByTag('instance-none')));

    expect(servers).toEqual([[], [], [], []]);
    expect(since(before)).toEqual([0, 4]);
  });

  it('sends nothing and refuses the call when every token’s budget is spent', async () => {
    const pool = tokenPool(runtime.deps, tokensOf(runtime.upstreamToken), 2_000, 'sweep');
    await Promise.all([setBucket(0, 0), setBucket(1, 0)]);
    const before = callsByToken();

    const refusal = await pool.getServer(1).catch((error: unknown) => error);

    expect(refusal).toBeInstanceOf(UpstreamBudgetSpentError);
    expect(since(before)).toEqual([0, 0]);
  });
});
