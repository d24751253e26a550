import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { applyBalanceRules, charge } from '../../shared/domain/billing';
import { serviceTag, upstreamTagOf } from '../../shared/domain/instances';
import { reconcile } from '../../shared/domain/reconciler';
import { getInstanceItem, updateInstanceAtVersion } from '../../shared/store/instances';
import { listLedgerEntries } from '../../shared/store/ledger';
import { upstream } from '../../shared/domain/upstream';
import { capacityCounters, capacityHeldByInstances, capacityUsed } from '../support/capacity';
import { useTestRuntime } from '../support/runtime';
import { setBillingState } from '../support/accounts';
import { prepareCommand } from '../../infra/ops/commands';
import { ORDERABLE_FLAVORS } from '../fixtures/flavors';

/** One server per instance, and records that follow what happened to the servers behind the service's back. */
const runtime = useTestRuntime({ env: { UPSTREAM_TIMEOUT_MS: '1000', UNKNOWN_OUTCOME_WINDOW_SECONDS: '5' } });

const action = (apiKey: string, id: number, body: unknown) => runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });
const serversOf = (instanceId: number) =>
  runtime.simulator.state().droplets.filter((d) => d.tags.includes(upstreamTagOf(runtime.deps, instanceId)));
const later = () => Date.now() + 10 * 60_000;
const jobsOf = async (instanceId: number) => {
  const { Items = [] } = await runtime.deps.dynamo.send(
    new QueryCommand({
      TableName: runtime.tableNames.jobs,
      IndexName: 'by_instance',
      KeyConditionExpression: 'instance_id = :id',
      ExpressionAttributeValues: { ':id': instanceId },
    }),
  );
  return Items;
};

describe('one server per instance', () => {
  it('keeps one server when a create times out and is carried out after the retry looked', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.simulator.control.faults({ latency_ms: 1_500, latency_match: 'POST /v2/droplets' });

    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'slow', flavor: 's-1vcpu-2gb' } });
    await vi.waitUntil(() => (runtime.simulator.state().calls['POST /v2/droplets'] ?? 0) >= 1, { timeout: 10_000, interval: 20 });
    await runtime.simulator.control.faults({ latency_ms: 0 });
    const active = await runtime.waitForStatus(apiKey, created.body.instance_id, ['active'], 30_000);

    expect(serversOf(created.body.instance_id).map((d) => d.id)).toEqual([Number(active.vps_id)]);
  });

  it("powers off a second server carrying an instance's tag, destroys it after the grace period, and keeps the instance's own", async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const tag = upstreamTagOf(runtime.deps, detail.instance_id);
    const twin = await (
      await upstream(runtime.deps)
    ).createServer({
      name: 'vps-twin',
      tags: [tag, serviceTag(runtime.deps)],
      size: 's-1vcpu-2gb',
      image: 'ubuntu-24-04-x64',
      userData: '',
    });
    await vi.waitUntil(() => runtime.simulator.state().droplets.find((d) => d.id === twin.id)?.status === 'active', { timeout: 10_000 });

    const found = await reconcile(runtime.deps, later());
    await vi.waitUntil(() => runtime.simulator.state().droplets.find((d) => d.id === twin.id)?.status === 'off', { timeout: 10_000 });
    const destroyed = await reconcile(runtime.deps, later() + 7 * 3_600_000);

    expect([found.orphansFound, found.leakedServersDestroyed]).toEqual([1, 0]);
    expect(destroyed.leakedServersDestroyed).toBe(1);
    expect(serversOf(detail.instance_id).map((d) => d.id)).toEqual([Number(detail.vps_id)]);
  });
});

describe('a stored server id that is not the instance’s', () => {
  it('never acts on a server carrying another instance’s tag: 502, the instance is failed, the other server untouched', async () => {
    const owner = await runtime.newAccount();
    const victim = await runtime.newAccount();
    const mine = await runtime.activeInstance(owner.apiKey);
    const theirs = await runtime.activeInstance(victim.apiKey);
    const item = (await getInstanceItem(runtime.deps, mine.instance_id))!;
    // As after an upstream that reuses ids: the stored id now names the other account's server.
    await updateInstanceAtVersion(runtime.deps, item, { changes: { upstream_id: Number(theirs.vps_id) } });
    const actionsBefore = runtime.simulator.state().calls['POST /v2/droplets/{id}/actions'] ?? 0;

    const response = await action(owner.apiKey, mine.instance_id, { type: 'power_off' });
    const detail = await runtime.call('GET', `/api/v1/instances/${mine.instance_id}`, { apiKey: owner.apiKey });

    expect([response.status, response.body.error]).toEqual([502, 'Upstream error']);
    expect(runtime.simulator.state().droplets.find((d) => d.id === Number(theirs.vps_id))?.status).toBe('active');
    expect(runtime.simulator.state().calls['POST /v2/droplets/{id}/actions'] ?? 0).toBe(actionsBefore);
    expect(detail.body.status).toBe('failed');
    expect(await capacityCounters(runtime.deps)).toEqual(await capacityHeldByInstances(runtime.deps));
  });
});

describe('drift sweep', () => {
  it('fails an instance whose server vanished, releases its capacity and ends billing when it was last seen', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    await reconcile(runtime.deps, later());
    const seenAt = (await getInstanceItem(runtime.deps, detail.instance_id))!.seen_at;
    await runtime.simulator.control.outOfBand(Number(detail.vps_id), { type: 'destroy' });

    // Absence is concluded from three reads by id, the first and the last ten minutes apart.
    const start = later();
    await reconcile(runtime.deps, start);
    await reconcile(runtime.deps, start + 5 * 60_000);
    const report = await reconcile(runtime.deps, start + 10 * 60_000);
    const reboot = await action(apiKey, detail.instance_id, { type: 'reboot' });
    await applyBalanceRules({ ...runtime.deps, clock: { now: () => new Date(Date.now() + 3_600_000) } }, accountId);
    const charged = (await listLedgerEntries(runtime.deps, accountId)).filter((entry) => entry.kind === 'meter');
    const jobs = await jobsOf(detail.instance_id);

    expect(report.drift).toEqual({ vanished: 1, foreign: 0, power: 0, size: 0 });
    expect((await runtime.call('GET', `/api/v1/instances/${detail.instance_id}`, { apiKey })).body.status).toBe('failed');
    expect([reboot.status, reboot.body.error]).toEqual([409, 'lifecycle conflict']);
    expect(jobs.find((job) => job.type === 'reconcile')).toMatchObject({ status: 'failed', error: 'The server no longer exists upstream' });
    expect(await capacityCounters(runtime.deps)).toEqual(await capacityHeldByInstances(runtime.deps));
    expect(seenAt).not.toBeNull();
    expect(charged.every((entry) => entry.period_end! <= seenAt!)).toBe(true);
  });

  it('follows power and size changed out of band, moving tier capacity with the size', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey, 's-1vcpu-2gb');
    const smallBefore = await capacityUsed(runtime.deps, 'capacity#tier#s-1vcpu-2gb');
    const largeBefore = await capacityUsed(runtime.deps, 'capacity#tier#s-2vcpu-4gb');
    await runtime.simulator.control.outOfBand(Number(detail.vps_id), { type: 'power_off' });
    await runtime.simulator.control.outOfBand(Number(detail.vps_id), { type: 'resize', size: 's-2vcpu-4gb' });

    const report = await reconcile(runtime.deps, later());
    const after = await getInstanceItem(runtime.deps, detail.instance_id);

    expect(report.drift).toEqual({ vanished: 0, foreign: 0, power: 1, size: 1 });
    expect([after?.status, after?.plan.flavor, after?.paused_by]).toEqual(['stopped', 's-2vcpu-4gb', 'user']);
    // Billed from the sweep on at a quarter of the larger plan's price; the running segment closed there, on the ledger.
    const pieces = (await listLedgerEntries(runtime.deps, accountId)).flatMap((entry) => entry.pieces ?? []);
    expect(pieces.map((p) => [p.hourly_micros, p.quarters, p.from, p.to])).toEqual([
      [17_860, 4, after!.activated_at, after!.billing_segments[0]!.start],
    ]);
    expect(after?.billing_segments.map((s) => [s.hourly_micros, s.quarters, s.end])).toEqual([[35_710, 1, null]]);
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-1vcpu-2gb')).toBe(smallBefore - 1);
    expect(await capacityUsed(runtime.deps, 'capacity#tier#s-2vcpu-4gb')).toBe(largeBefore + 1);
  });
});

describe('billing pause held by the sweep', () => {
  const serverStatus = (serverId: number) => runtime.simulator.state().droplets.find((d) => d.id === serverId)?.status;

  it('powers off a server powered on out of band on a billing-paused account', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '5.00' });
    const detail = await runtime.activeInstance(apiKey);
    const serverId = Number(detail.vps_id);
    await charge(runtime.deps, accountId, 6_000_000, 'operator charge');
    await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);
    await runtime.simulator.control.outOfBand(serverId, { type: 'power_on' });

    const report = await reconcile(runtime.deps, later());
    await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);

    expect(report.drift.power).toBe(1);
    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({ status: 'stopped', paused_by: 'billing' });
    expect(serverStatus(serverId)).toBe('off');
  });

  it('powers off a running server of a billing-paused account that the pause left running', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    // As if the pause's own power-off could not be recorded (a dependency down at that moment).
    await setBillingState(runtime.deps, accountId, { balance: -1_000, billing_paused: true });

    const report = await reconcile(runtime.deps, later());
    await runtime.waitForStatus(apiKey, detail.instance_id, ['stopped']);

    expect(report.drift.power).toBe(0);
    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({ status: 'stopped', paused_by: 'billing' });
    expect(serverStatus(Number(detail.vps_id))).toBe('off');
  });

  it('leaves a running server of an account that is not paused running', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);

    await reconcile(runtime.deps, later());

    expect(await getInstanceItem(runtime.deps, detail.instance_id)).toMatchObject({ status: 'active', active_job_id: null });
    expect(serverStatus(Number(detail.vps_id))).toBe('active');
  });
});

describe('operator commands', () => {
  const run = (...positionals: string[]) =>
    prepareCommand(positionals, positionals.includes('reconcile') ? { grace: '0' } : {})(runtime.deps);

  it('capacity show prints every pool with its limit and the units in use', async () => {
    const { apiKey } = await runtime.newAccount();
    await runtime.activeInstance(apiKey, 's-4vcpu-8gb');

    const { json } = await run('capacity', 'show');

    expect(Object.keys(json)).toEqual(['ipv4', 'tiers']);
    expect(json.ipv4).toEqual({ limit: 1000, used: await capacityUsed(runtime.deps, 'capacity#ipv4') });
    expect(Object.keys(json.tiers as object)).toEqual(ORDERABLE_FLAVORS);
    expect((json.tiers as Record<string, unknown>)['s-4vcpu-8gb']).toEqual({
      limit: 200,
      used: await capacityUsed(runtime.deps, 'capacity#tier#s-4vcpu-8gb'),
    });
  });

  it('audit exits 1 listing a drifted instance; reconcile repairs it and audit then exits 0', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    await runtime.simulator.control.outOfBand(Number(detail.vps_id), { type: 'power_off' });

    const before = await run('audit');
    const repaired = await run('reconcile');
    const after = await run('audit');

    expect(before.exitCode).toBe(1);
    expect(before.json.instances).toEqual([{ instance_id: detail.instance_id, kinds: ['power'] }]);
    expect(repaired.json).toMatchObject({ drift: { vanished: 0, foreign: 0, power: 1, size: 0 } });
    expect([after.exitCode, after.json.drift_count]).toEqual([0, 0]);
  });
});
