import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { sweepFleet } from '../../shared/domain/fleet-sweep';
import { getSweepCursor } from '../../shared/store/sweeps';
import { takeUpstreamTokens } from '../../shared/store/upstream-budget';
import { installDynamoCallRecorder, recordDynamoCalls, sequentialRounds, type DynamoCall } from '../../bench/dynamo-calls';
import { tokensAt } from '../../shared/model/upstream-budget';
import { RuntimeState } from '../../shared/platform';
import { useTestRuntime } from '../support/runtime';
import { setBudgetBucket } from '../support/upstream-budget';

/** A budget of 20 calls in a burst, refilled at one a second (3,600 an hour). */
const runtime = useTestRuntime({ env: { UPSTREAM_BUDGET_BURST: '20', UPSTREAM_BUDGET_PER_HOUR: '3600' } });
const SETTINGS = { capacity: 20, refillPerSecond: 1 };

const BUCKET = { name: 'upstream-budget#0' };
const setBucket = (tokens: number) => setBudgetBucket(runtime, 0, tokens);
const take = () => takeUpstreamTokens(runtime.deps, 0, 'workflow', SETTINGS);
const takeInOneRound = (deps: typeof runtime.deps) => takeUpstreamTokens(deps, 0, 'workflow', SETTINGS, { inOneRound: true });
const bucket = async () =>
  (await runtime.deps.dynamo.send(new GetCommand({ TableName: runtime.tableNames.counters, Key: BUCKET, ConsistentRead: true }))).Item;
const bucketState = (item: Record<string, unknown> | undefined) => ({ tat: Number(item?.tat), holdUntil: Number(item?.hold_until ?? 0) });
const liveReads = () => runtime.simulator.state().calls['GET /v2/droplets/{id}'] ?? 0;
const detail = async (apiKey: string, id: number) => (await runtime.call('GET', `/api/v1/instances/${id}`, { apiKey })).body;

describe('upstream request budget', () => {
  // Full again for the next test's lifecycles.
  afterEach(() => setBucket(20));

  it('answers instance detail from the stored state, reading nothing upstream, while live reads would dip into the reserved half', async () => {
    const { apiKey } = await runtime.newAccount();
    const { instance_id: id, vps_id } = await runtime.activeInstance(apiKey);
    await runtime.simulator.control.outOfBand(Number(vps_id), { type: 'power_off' });
    await setBucket(10);
    const readsBefore = liveReads();

    const stored = await runtime.call('GET', `/api/v1/instances/${id}`, { apiKey });
    const readsWhileLow = liveReads() - readsBefore;
    await setBucket(20);
    const live = await runtime.call('GET', `/api/v1/instances/${id}`, { apiKey });

    expect([stored.body.status, stored.headers.get('warning'), readsWhileLow]).toEqual(['active', '110 - "Response is Stale"', 0]);
    expect([live.body.status, live.headers.get('warning')]).toEqual(['stopped', null]);
    expect(liveReads() - readsBefore).toBe(1);
  });

  it('takes 32 concurrent tokens from a bucket it last saw not full with one conditional write each and no read: 19 granted, 13 refused', async () => {
    await setBucket(20);
    await take();
    const calls: DynamoCall[] = [];
    installDynamoCallRecorder(runtime.deps);

    const granted = await recordDynamoCalls(calls, () => Promise.all(Array.from({ length: 32 }, () => take())));

    expect(granted.filter(Boolean)).toHaveLength(19);
    expect(calls.map((call) => call.operation)).toEqual(Array.from({ length: 32 }, () => 'UpdateItemCommand'));
  });

  it('never gives a token twice when 32 takes race for a full bucket: 20 granted, each in at most three writes, no read', async () => {
    await take();
    await setBucket(20);
    const calls: DynamoCall[] = [];
    installDynamoCallRecorder(runtime.deps);

    const granted = await recordDynamoCalls(calls, () => Promise.all(Array.from({ length: 32 }, () => take())));

    expect(granted.filter(Boolean)).toHaveLength(20);
    expect(calls.every((call) => call.operation === 'UpdateItemCommand')).toBe(true);
    expect(calls.length).toBeGreaterThan(32);
    expect(calls.length).toBeLessThanOrEqual(32 * 3);
    expect(Number((await bucket())?.tat) - Date.now()).toBeGreaterThan(18_000);
  });

  it('never gives a token twice when 32 takes in one round race for a full bucket: 20 granted, each in at most three rounds of at most two writes', async () => {
    await take();
    await setBucket(20);
    const callsOfEach = Array.from({ length: 32 }, (): DynamoCall[] => []);
    installDynamoCallRecorder(runtime.deps);

    const granted = await Promise.all(callsOfEach.map((calls) => recordDynamoCalls(calls, () => takeInOneRound(runtime.deps))));

    expect(granted.filter(Boolean)).toHaveLength(20);
    expect(callsOfEach.flat().every((call) => call.operation === 'UpdateItemCommand')).toBe(true);
    expect(Math.max(...callsOfEach.map(sequentialRounds))).toBeLessThanOrEqual(3);
    expect(Math.max(...callsOfEach.map((calls) => calls.length))).toBeLessThanOrEqual(6);
    expect(Number((await bucket())?.tat) - Date.now()).toBeGreaterThan(18_000);
  });

  it('takes in one round from a bucket another function took from since this one saw it full: two writes at once, one holds', async () => {
    const container = { ...runtime.deps, state: new RuntimeState() };
    await runtime.deps.dynamo.send(
      new PutCommand({ TableName: runtime.tableNames.counters, Item: { ...BUCKET, tat: Date.now() - 10_000 } }),
    );
    await takeUpstreamTokens(container, 0, 'workflow', SETTINGS, { nowMs: Date.now() - 5_000 });
    await setBucket(15);
    const calls: DynamoCall[] = [];
    installDynamoCallRecorder(runtime.deps);

    const granted = await recordDynamoCalls(calls, () => takeInOneRound(container));

    expect(granted).toBe(true);
    expect([calls.length, sequentialRounds(calls), calls.filter((call) => call.failed).length]).toEqual([2, 1, 1]);
    expect(tokensAt(bucketState(await bucket()), Date.now(), SETTINGS)).toBeCloseTo(14, 0);
  });

  it('takes once in one round from a full bucket it has not seen, even when the write that sets it lands before the one that adds', async () => {
    const container = { ...runtime.deps, state: new RuntimeState() };
    await setBucket(20);
    const calls: DynamoCall[] = [];
    installDynamoCallRecorder(runtime.deps);
    const addingLast = 'delay the write that adds';
    runtime.deps.dynamo.middlewareStack.add(
      (next) => async (args) => {
        const { UpdateExpression } = args.input as { UpdateExpression?: string };
        if (UpdateExpression?.includes('tat + :add')) await new Promise((resolve) => setTimeout(resolve, 200));
        return next(args);
      },
      { step: 'initialize', name: addingLast },
    );

    const granted = await recordDynamoCalls(calls, () => takeInOneRound(container)).finally(() =>
      runtime.deps.dynamo.middlewareStack.remove(addingLast),
    );

    const [first, last] = [...calls].sort((a, b) => a.endedAt - b.endedAt);
    expect(granted).toBe(true);
    expect([first?.failed, last?.failed, String(last?.input.UpdateExpression)]).toEqual([false, true, 'SET tat = tat + :add']);
    expect(sequentialRounds(calls)).toBe(1);
    expect(tokensAt(bucketState(await bucket()), Date.now(), SETTINGS)).toBeCloseTo(19, 0);
  });

  it('lets a lifecycle take the tokens that live reads may not', async () => {
    const { apiKey } = await runtime.newAccount();
    const { instance_id: id } = await runtime.activeInstance(apiKey);
    const setAt = Date.now();
    await setBucket(10);

    const accepted = await runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body: { type: 'power_off' } });
    const job = await runtime.waitForJob(apiKey, accepted.body.job_id);

    expect([accepted.status, job.status]).toEqual([200, 'succeeded']);
    // A take moves the bucket's full-again time a second further than the 10 s it was set to.
    expect(Number((await bucket())?.tat)).toBeGreaterThanOrEqual(setAt + 11_000);
  });

  it('ends the sweep’s slice when only the lifecycles’ fifth is left, and resumes at the same page', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.activeInstance(apiKey);
    const cursorBefore = await getSweepCursor(runtime.deps);
    await setBucket(4);

    const starved = await sweepFleet(runtime.deps, Date.now() + 600_000);
    const cursorStarved = await getSweepCursor(runtime.deps);
    await setBucket(20);
    const fed = await sweepFleet(runtime.deps, Date.now() + 600_000);

    expect([starved.pages, starved.passCompleted]).toEqual([0, false]);
    expect(cursorStarved.next_page).toBe(cursorBefore.next_page);
    expect(fed.pages).toBeGreaterThan(0);
  });

  it('holds live reads after an upstream 429 until its Retry-After has passed', async () => {
    const { apiKey } = await runtime.newAccount();
    const { instance_id: id } = await runtime.activeInstance(apiKey);
    await runtime.simulator.control.faults({ fail_next: 1, status: 429, match: 'GET /v2/droplets/' });
    const readsBefore = liveReads();

    await detail(apiKey, id);
    const heldUntil = Number((await bucket())?.hold_until);
    await detail(apiKey, id);
    const readsDuringHold = liveReads() - readsBefore;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, heldUntil - Date.now()) + 50));
    await detail(apiKey, id);

    // The simulator's 429 says Retry-After: 1.
    expect(heldUntil - Date.now()).toBeLessThanOrEqual(1_000);
    expect(readsDuringHold).toBe(1);
    expect(liveReads() - readsBefore).toBe(2);
  });
});
