import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { TestRuntime } from './runtime';

/**
 * Sets upstream token `slot`'s request budget to hold `tokens` now, for a runtime whose budget is 20 calls in a burst
 * refilled at one a second: the bucket is full again (20 − tokens) seconds from now.
 */
export function setBudgetBucket(runtime: TestRuntime, slot: number, tokens: number) {
  return runtime.deps.dynamo.send(
    new PutCommand({
      TableName: runtime.tableNames.counters,
      Item: { name: `upstream-budget#${slot}`, tat: Date.now() + (20 - tokens) * 1000, hold_until: 0 },
    }),
  );
}
