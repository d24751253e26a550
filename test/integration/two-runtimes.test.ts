import type { ServiceEvent } from '../../shared/schemas/events';
import { getAccount } from '../../shared/store/accounts';
import { eventually } from '../support/receiver';
import { useTestRuntime } from '../support/runtime';

// Two whole services in this one process, configured apart: each has its own settings, tables, upstream, clients,
// caches and event bus, and neither sees the other's.
const first = useTestRuntime();
const second = useTestRuntime({ env: { INSTANCE_DOMAIN_SUFFIX: 'second.example.net', STAGE: 'second' } });

describe('two local runtimes in one process', () => {
  it('each serves its own accounts and servers, with its own settings, and publishes only its own events', async () => {
    const seen = { first: [] as ServiceEvent[], second: [] as ServiceEvent[] };
    const unsubscribe = [first.events.subscribe((e) => void seen.first.push(e)), second.events.subscribe((e) => void seen.second.push(e))];
    try {
      const a = await first.newAccount();
      const b = await second.newAccount();

      const [onFirst, onSecond] = await Promise.all([first.activeInstance(a.apiKey), second.activeInstance(b.apiKey)]);

      expect(onFirst.domain).toBe(`vps-${onFirst.instance_id}.vps.example.net`);
      expect(onSecond.domain).toBe(`vps-${onSecond.instance_id}.second.example.net`);
      expect(first.simulator.state().droplets.map((d) => [...d.tags].sort())).toEqual([
        ['vps-local', `vps-local-instance-${onFirst.instance_id}`],
      ]);
      expect(second.simulator.state().droplets.map((d) => [...d.tags].sort())).toEqual([
        ['vps-second', `vps-second-instance-${onSecond.instance_id}`],
      ]);
      expect((await first.call('GET', '/api/v1/instances', { apiKey: b.apiKey })).status).toBe(401);
      expect((await second.call('GET', '/api/v1/instances', { apiKey: a.apiKey })).status).toBe(401);
      expect(await getAccount(first.deps, b.accountId)).toBeUndefined();
      expect(await getAccount(second.deps, b.accountId)).toMatchObject({ account_id: b.accountId });
      await eventually(
        () =>
          [seen.first, seen.second].every((events) => events.some((e) => e.type === 'instance.status_changed' && e.data.to === 'active')),
        'each runtime’s active event',
      );
      expect(new Set(seen.first.map((e) => e.account_id))).toEqual(new Set([a.accountId]));
      expect(new Set(seen.second.map((e) => e.account_id))).toEqual(new Set([b.accountId]));
    } finally {
      for (const stop of unsubscribe) stop();
    }
  });
});
