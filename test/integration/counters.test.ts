import { nextSequenceValue } from '../../shared/store/counters';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

describe('nextSequenceValue', () => {
  it('hands out unique values under concurrency, increasing within the process', async () => {
    const values = await Promise.all(Array.from({ length: 100 }, () => nextSequenceValue(runtime.deps, 'instance_id')));
    const sequential: number[] = [];
    for (let i = 0; i < 30; i++) sequential.push(await nextSequenceValue(runtime.deps, 'instance_id'));

    expect(new Set([...values, ...sequential]).size).toBe(130);
    expect(sequential).toEqual([...sequential].sort((a, b) => a - b));
    expect(Math.min(...values)).toBeGreaterThan(0);
  });
});
