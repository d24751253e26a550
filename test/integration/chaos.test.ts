import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { listRunningJobs } from '../../shared/store/jobs';
import { listLedgerEntries } from '../../shared/store/ledger';
import type { ServiceEvent } from '../../shared/schemas/events';
import { inProcessTarget, runChaos } from '../chaos/chaos';
import { checkInvariants } from '../chaos/invariants';
import { CHAOS_RUNTIME } from '../chaos/runtime-settings';
import { useTestRuntime } from '../support/runtime';

/** A short seeded chaos run (the long ones are `npm run chaos`), and proof that its checks catch what they check. */
const runtime = useTestRuntime(CHAOS_RUNTIME);
const events: ServiceEvent[] = [];
const check = (accountIds: string[], more: Partial<Parameters<typeof checkInvariants>[0]> = {}) =>
  checkInvariants({ deps: runtime.deps, simulator: runtime.simulator, events: () => events, accountIds, ...more });
beforeAll(() => runtime.events.subscribe(async (event) => void events.push(event)));

describe('chaos run', () => {
  it('keeps every invariant through 120 random operations under faults, out-of-band changes and a crash (seed 20261123)', async () => {
    const report = await runChaos({ seed: 20261123, ops: 120, target: inProcessTarget(runtime), crashes: 1 });

    expect(report.violations).toEqual([]);
    expect(report.operations.crash).toBe(1);
    expect(report.instances).toBeGreaterThan(3);
  }, 300_000);
});

describe('chaos invariants', () => {
  it('report a server powered off behind the service, until the reconciler follows it', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    await runtime.simulator.control.outOfBand(Number(detail.vps_id), { type: 'power_off' });

    const violations = await check([accountId]);

    expect(violations).toContain(`instance ${detail.instance_id} (active): its server is off`);
  });

  it('report a usage entry that charges more than its pieces cost', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    await runtime.waitForJob(
      apiKey,
      (await runtime.call('POST', `/api/v1/instances/${detail.instance_id}/actions`, { apiKey, body: { type: 'power_off' } })).body.job_id,
    );
    const [entry] = (await listLedgerEntries(runtime.deps, accountId)).filter((e) => e.kind === 'meter');
    const [piece] = entry!.pieces!;
    await runtime.deps.dynamo.send(
      new UpdateCommand({
        TableName: runtime.tableNames.ledger,
        Key: { account_id: accountId, entry_id: entry!.entry_id },
        UpdateExpression: 'SET pieces[0].amount = :more',
        ExpressionAttributeValues: { ':more': piece!.amount + 1 },
      }),
    );

    const violations = await check([accountId]);

    expect(violations).toContain(
      `account ${accountId}: entry ${entry!.entry_id} charges ${-entry!.amount}, its pieces ${-entry!.amount + 1}`,
    );
  });

  it('report a committed status change whose event never came', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    await vi.waitUntil(
      () => events.some((e) => e.instance_id === detail.instance_id && e.type === 'instance.status_changed' && e.data.to === 'active'),
      { timeout: 10_000 },
    );
    const lost = events.find(
      (e) => e.instance_id === detail.instance_id && e.type === 'instance.status_changed' && e.data.to === 'provisioning',
    );

    const violations = await check([accountId], { events: () => events.filter((e) => e !== lost) });

    expect(violations).toContain(
      `instance ${detail.instance_id}: an event from provisioning follows status pending (a change without its event)`,
    );
  });

  it('report a live server destroyed by anyone but its owner out of band', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const mine = await runtime.activeInstance(apiKey);
    const theirs = await runtime.activeInstance(apiKey);
    await fetch(`${runtime.simulator.url}/v2/droplets/${mine.vps_id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${runtime.upstreamToken}` },
    });
    await runtime.simulator.control.outOfBand(Number(theirs.vps_id), { type: 'destroy' });

    const violations = await check([accountId]);

    expect(violations).toContain(`instance ${mine.instance_id} (active): the service destroyed its server ${mine.vps_id}`);
    expect(violations.filter((v) => v.includes(`destroyed its server ${theirs.vps_id}`))).toEqual([]);
  });

  it('report a server running on a billing-paused account', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);

    const violations = await check([accountId], { pausedAccounts: new Set([accountId]) });

    expect(violations).toContainEqual(
      expect.stringMatching(new RegExp(`^server ${detail.vps_id} .* runs on billing-paused account ${accountId}$`)),
    );
  });

  it('report a create answered 504 whose key does not replay what it deployed, and a key naming two instances', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const first = await runtime.activeInstance(apiKey);
    const second = await runtime.activeInstance(apiKey);
    const record = { accountId, projectName: 'test', flavor: 's-1vcpu-2gb' };

    const violations = await check([accountId], {
      creates: [
        { ...record, key: 'unknown', answers: [504, 0], instanceIds: [] },
        { ...record, key: 'twice', answers: [202, 202], instanceIds: [first.instance_id, second.instance_id] },
      ],
    });

    expect(violations).toEqual(
      expect.arrayContaining([
        `create unknown (answered 504, 0): deployed instance ${first.instance_id}, which its key does not replay`,
        `create twice (answered 202, 202): its key named instances ${first.instance_id} and ${second.instance_id}`,
      ]),
    );
  });

  it('report a running job whose execution is gone after a crash', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    await runtime.simulator.control.config({ boot_ms: 60_000 });
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'lost', flavor: 's-1vcpu-2gb' } });
    const [job] = await listRunningJobs(runtime.deps, created.body.instance_id);
    await runtime.crashAndRestart();
    await runtime.simulator.control.config({ boot_ms: CHAOS_RUNTIME.bootMs });

    const violations = await check([accountId]);

    expect(violations).toEqual(
      expect.arrayContaining([
        `provision job ${job!.job_id} is running without a running execution`,
        `instance ${created.body.instance_id} (provisioning) is still in a transitional status`,
      ]),
    );
  });
});
