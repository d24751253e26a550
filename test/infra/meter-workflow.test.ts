import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../infra/constructs/api-function';
import { METER_SHARD_TIMEOUT_SECONDS, workflows } from '../../infra/workflows';
import { schedules } from '../../infra/schedules';
import { METER_LEASE_MS, SHARD_ACCOUNT_CONCURRENCY } from '../../shared/domain/billing';
import { METER_SHARDS } from '../../shared/model/billing-segments';

type State = Record<string, any>;
const asl = JSON.parse(readFileSync(join(REPO_ROOT, workflows.meter.definitionFile), 'utf8')) as { States: Record<string, State> };
const map = asl.States.ChargeShards!;
const worker = map.ItemProcessor.States.ChargeShard as State;

describe('meter state machine', () => {
  it('fans out over exactly the shards of the meter index, all of them at once', () => {
    expect(asl.States.Shards!.Parameters['shards.$']).toBe(`States.ArrayRange(0, ${METER_SHARDS - 1}, 1)`);
    expect(map).toMatchObject({ Type: 'Map', ItemsPath: '$.shards', MaxConcurrency: METER_SHARDS });
    expect(map.ItemProcessor.ProcessorConfig).toEqual({ Mode: 'INLINE' });
  });

  it('has every shard charge up to the instant the execution started, under the execution as lease holder', () => {
    expect(map.ItemSelector).toEqual({ 'shard.$': '$$.Map.Item.Value', 'now.$': '$$.Execution.StartTime', 'holder.$': '$$.Execution.Id' });
    expect(worker).toMatchObject({ Type: 'Task', Resource: '${MeterShardFunctionArn}' });
    expect(Object.keys(workflows.meter.steps)).toEqual(['MeterShardFunctionArn']);
  });

  it('keeps a shard that still fails from stopping the others, and ends the execution failed', () => {
    expect(worker.Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'ShardFailed' }]);
    expect(map.ItemProcessor.States.ShardFailed).toEqual({ Type: 'Pass', Result: 'failed', End: true });
    expect(asl.States.AnyShardFailed!.Choices).toEqual([{ Variable: '$.failed', BooleanEquals: true, Next: 'ShardsFailed' }]);
    expect(asl.States.ShardsFailed).toMatchObject({ Type: 'Fail', Error: 'MeterShardsFailed' });
  });

  it('holds a shard lease longer than a worker can run and shorter than the period, so a dead worker never blocks the next run', () => {
    expect(METER_LEASE_MS).toBeGreaterThan(METER_SHARD_TIMEOUT_SECONDS * 1000);
    expect(METER_LEASE_MS).toBeLessThan(schedules.meter.everyMinutes * 60_000);
  });

  it('sizes a worker for 1M live instances well within its timeout: 62,500 charges, 32 at once, 15 ms each', () => {
    const seconds = ((1_000_000 / METER_SHARDS) * 0.015) / SHARD_ACCOUNT_CONCURRENCY;
    expect(seconds).toBeCloseTo(29.3, 1);
    expect(seconds).toBeLessThan(METER_SHARD_TIMEOUT_SECONDS / 2);
  });
});
