import { TokenPoolDriver } from '../../shared/upstream/token-pool';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { sweepFleet } from '../../shared/domain/fleet-sweep';
import { reconcile } from '../../shared/domain/reconciler';
import { newJob } from '../../shared/domain/jobs';
import { getInstanceItem, updateInstanceAtVersion } from '../../shared/store/instances';
import { getSweepCursor } from '../../shared/store/sweeps';
import { readOrphanBook } from '../../shared/store/orphans';
import { UpstreamTransientError } from '../../shared/upstream/driver';
import { useTestRuntime } from '../support/runtime';
import { orphanServer as createOrphanServer } from '../support/orphans';

/** Listings of two servers a page, so that a handful of instances spans several pages. */
const runtime = useTestRuntime({ env: { UPSTREAM_PAGE_SIZE: '2' } });

const later = () => Date.now() + 10 * 60_000;
const listCalls = () => runtime.simulator.state().calls['GET /v2/droplets'] ?? 0;
const readByIdCalls = () => runtime.simulator.state().calls['GET /v2/droplets/{id}'] ?? 0;
const actionCalls = () => runtime.simulator.state().calls['POST /v2/droplets/{id}/actions'] ?? 0;
const droplet = (id: number) => runtime.simulator.state().droplets.find((d) => d.id === id);
const orphanServer = (name: string) => createOrphanServer(runtime.deps, name);
const indexKeysOf = async (instanceId: number) => {
  const { Item = {} } = await runtime.deps.dynamo.send(
    new GetCommand({ TableName: runtime.tableNames.instances, Key: { instance_id: instanceId }, ConsistentRead: true }),
  );
  return { inflight: Item.inflight_shard, sweep: Item.sweep_shard, seen: Item.sweep_seen_at, listed: Item.live_account_id };
};
/** Runs the sweep one page at a time until a pass ends; returns each run's report. */
const sweepPassOnePageAtATime = async (now: number) => {
  const runs = [await sweepFleet(runtime.deps, now, 1)];
  while (!runs.at(-1)!.passCompleted && runs.length < 50) runs.push(await sweepFleet(runtime.deps, now, 1));
  return runs;
};

describe('fleet sweep', () => {
  it('spreads a pass over runs, one page each, resuming where the last run stopped', async () => {
    const { apiKey } = await runtime.newAccount();
    for (let i = 0; i < 5; i++) await runtime.activeInstance(apiKey);
    await sweepPassOnePageAtATime(later());
    const serverCount = runtime.simulator.state().droplets.length;
    const callsBefore = listCalls();

    const runs = await sweepPassOnePageAtATime(later());

    expect(runs.map((run) => run.pages)).toEqual(runs.map(() => 1));
    expect(runs.map((run) => run.passCompleted)).toEqual([...runs.slice(1).map(() => false), true]);
    expect(runs).toHaveLength(Math.ceil(serverCount / 2));
    expect(listCalls() - callsBefore).toBe(runs.length);
  });

  it('reads a server the pass did not show by id, keeps a 404 as evidence, and fails its instance only once reads over ten minutes conclude it', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const start = later();
    await sweepPassOnePageAtATime(start);
    await runtime.simulator.control.outOfBand(Number(detail.vps_id), { type: 'destroy' });
    const readsBefore = readByIdCalls();

    const first = await sweepPassOnePageAtATime(start + 60_000);
    const afterFirst = await getInstanceItem(runtime.deps, detail.instance_id);
    const second = await sweepPassOnePageAtATime(start + 6 * 60_000);
    const third = await sweepPassOnePageAtATime(start + 11 * 60_000);

    expect(first.map((run) => run.drift.vanished)).toEqual(first.map(() => 0));
    expect(first.at(-1)!.absencesSuspected).toBe(1);
    expect(afterFirst).toMatchObject({ status: 'active', absent_reads: 1, absent_since: new Date(start + 60_000).toISOString() });
    expect([second.at(-1)!.drift.vanished, second.at(-1)!.absencesSuspected]).toEqual([0, 1]);
    expect([third.at(-1)!.drift.vanished, third.at(-1)!.absencesSuspected]).toEqual([1, 0]);
    expect(readByIdCalls() - readsBefore).toBe(3);
    expect((await getInstanceItem(runtime.deps, detail.instance_id))?.status).toBe('failed');
  });

  it('marks every instance whose server a pass showed as seen at that pass, and reads none of them by id', async () => {
    const { apiKey } = await runtime.newAccount();
    const ids = [(await runtime.activeInstance(apiKey)).instance_id, (await runtime.activeInstance(apiKey)).instance_id];
    await sweepPassOnePageAtATime(later());
    const now = later();
    const readsBefore = readByIdCalls();

    await sweepPassOnePageAtATime(now);

    for (const id of ids) expect((await getInstanceItem(runtime.deps, id))?.seen_at).toBe(new Date(now).toISOString());
    expect(readByIdCalls() - readsBefore).toBe(0);
  });
});

describe('fleet sweep under upstream failure', () => {
  it('keeps the pages already swept when a later page cannot be read, and fails the run', async () => {
    const { apiKey } = await runtime.newAccount();
    for (let i = 0; i < 4; i++) await runtime.activeInstance(apiKey);
    await sweepPassOnePageAtATime(later());
    // Every driver the sweep makes reads pages through the token pool: its third page answers 503.
    const readPage = TokenPoolDriver.prototype.serverPageByTag;
    const failing = vi.spyOn(TokenPoolDriver.prototype, 'serverPageByTag').mockImplementation(async function (
      this: TokenPoolDriver,
      tag,
      page,
    ) {
      if (page === 3) throw new UpstreamTransientError('DigitalOcean GET /v2/droplets answered 503', 503);
      return readPage.call(this, tag, page);
    });

    const run = sweepFleet(runtime.deps, later(), 10);

    await expect(run).rejects.toThrow('answered 503');
    failing.mockRestore();
    expect((await getSweepCursor(runtime.deps)).next_page).toBe(3);
  });
});

describe('sparse index keys', () => {
  it('puts an instance in the in-flight index while a lifecycle runs, in the sweep index while it has a server, and takes it out of all at deletion', async () => {
    const { apiKey, accountId } = await runtime.newAccount();
    const created = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'keys', flavor: 's-1vcpu-2gb' } });
    const id = created.body.instance_id;
    const pending = await indexKeysOf(id);
    await runtime.waitForStatus(apiKey, id, ['active']);
    const active = await indexKeysOf(id);
    await runtime.call('DELETE', `/api/v1/instances/${id}`, { apiKey });
    await vi.waitUntil(async () => (await getInstanceItem(runtime.deps, id))?.status === 'destroyed', { timeout: 20_000, interval: 100 });
    const destroyed = await indexKeysOf(id);

    expect(pending).toEqual({ inflight: `inflight#${id % 8}`, sweep: undefined, seen: undefined, listed: accountId });
    expect(active).toMatchObject({ inflight: undefined, sweep: `sweep#${id % 16}`, listed: accountId });
    expect(typeof active.seen).toBe('string');
    expect(destroyed).toEqual({ inflight: undefined, sweep: undefined, seen: undefined, listed: undefined });
  });

  it('repairs an abandoned action found through the in-flight index', async () => {
    const { apiKey } = await runtime.newAccount();
    const detail = await runtime.activeInstance(apiKey);
    const item = (await getInstanceItem(runtime.deps, detail.instance_id))!;
    // As after a crash between recording the action and starting its workflow: an action job that nothing runs.
    const job = newJob('reboot', item);
    await updateInstanceAtVersion(runtime.deps, item, { changes: { active_job_id: job.job_id }, job });
    const inFlight = await indexKeysOf(detail.instance_id);

    const report = await reconcile(runtime.deps, later());

    expect(inFlight.inflight).toBe(`inflight#${detail.instance_id % 8}`);
    expect(report.actionsSettled).toBe(1);
    expect(await indexKeysOf(detail.instance_id)).toMatchObject({ inflight: undefined });
  });
});

// Last in the file: the guard it trips stays tripped.
describe('the blast-radius guard', () => {
  it('powers off none of twelve servers newly found orphaned in one run, and trips', async () => {
    const orphans = await Promise.all(Array.from({ length: 12 }, (_, n) => orphanServer(`vps-stray-${n}`)));
    await vi.waitUntil(() => orphans.every((orphan) => droplet(orphan.id)?.status === 'active'), { timeout: 10_000 });
    const actionsBefore = actionCalls();

    const report = await sweepFleet(runtime.deps, later());
    const book = await readOrphanBook(runtime.deps);

    expect([report.orphansFound, report.guardHalted]).toEqual([0, true]);
    expect(orphans.map((orphan) => droplet(orphan.id)?.status)).toEqual(orphans.map(() => 'active'));
    expect(actionCalls() - actionsBefore).toBe(0);
    expect(book.guard.reason).toBe('more than 10 servers found orphaned in one run');
    expect(book.orphans.size).toBe(0);
  });
});
