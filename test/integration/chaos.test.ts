import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo } from '../../shared/aws';
import { runMeter } from '../../shared/domain/billing';
import { listRunningJobs } from '../../shared/store/jobs';
import { listLedgerEntries } from '../../shared/store/ledger';
import type { ServiceEvent } from '../../shared/schemas/events';
import { CHAOS_RUNTIME, runChaos } from '../chaos/chaos';
import { checkInvariants } from '../chaos/invariants';
import { useTestRuntime } from '../support/runtime';

/** A short seeded chaos run (the long ones are `npm run chaos`), and proof that its checks catch what they check. */
const runtime = useTestRuntime(CHAOS_RUNTIME);
const events: ServiceEvent[] = [];
const check = (accountIds: string[]) => checkInvariants({ runtime, events, accountIds });
beforeAll(() => runtime.events.subscribe(async (event) => void events.push(event)));

describe('chaos run', () => {
  it('keeps every invariant through 120 random operations under faults, out-of-band changes and a crash (seed 20261123)', async () => {
    const report = await runChaos({ seed: 20261123, ops: 120, runtime, crashes: 1 });

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

  it('report a meter entry that charges more than its segments cost', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    await runMeter(Date.now() + 3_600_000);
    const [entry] = (await listLedgerEntries(accountId)).filter((e) => e.kind === 'meter');
    const [piece] = entry!.pieces!;
    await dynamo().send(
      new UpdateCommand({
        TableName: runtime.tableNames.ledger,
        Key: { account_id: accountId, entry_id: entry!.entry_id },
        UpdateExpression: 'SET pieces[0].amount = :more',
        ExpressionAttributeValues: { ':more': piece!.amount + 1 },
      }),
    );

    const violations = await check([accountId]);

    expect(violations).toContain(
      `instance ${detail.instance_id}: entry ${entry!.entry_id} charges ${-entry!.amount}, its segments ${-entry!.amount + 1}`,
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

    const violations = await checkInvariants({ runtime, events: events.filter((e) => e !== lost), accountIds: [accountId] });

    expect(violations).toContain(
      `instance ${detail.instance_id}: an event from provisioning follows status pending (a change without its event)`,
    );
  });

  it('report a running job whose execution is gone after a crash', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    await runtime.simulator.control.config({ boot_ms: 60_000 });
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'lost', flavor: 's-1vcpu-2gb' } });
    const [job] = await listRunningJobs(created.body.instance_id);
    await runtime.crashAndRestart();
    await runtime.simulator.control.config({ boot_ms: CHAOS_RUNTIME.bootMs });

    const violations = await check([accountId]);

    expect(violations).toEqual(
      expect.arrayContaining([
        `provision job ${job!.job_id} is running with its execution MISSING`,
        `instance ${created.body.instance_id} (provisioning) is still in a transitional status`,
      ]),
    );
  });
});
