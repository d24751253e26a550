import { inject } from 'vitest';
import { getAccount } from '../../shared/store/accounts';
import { listLedgerEntries } from '../../shared/store/ledger';
import { startOutageProxy } from '../support/outage-proxy';
import { eventually } from '../support/receiver';
import { useTestRuntime } from '../support/runtime';

const OUTAGE_MS = 3_000;

/** The service reaches DynamoDB Local only through this proxy, which can make it unreachable for a while. */
const proxy = await startOutageProxy(inject('dynamodbEndpoint'));
afterAll(() => proxy.close());

// The provider retries a failed delivery after 0.5, 1, 2, 4 and 8 s: past the outage, as Stripe's retries are.
const runtime = useTestRuntime({ dynamodbEndpoint: proxy.endpoint, paymentsDelivery: { deliveryAttempts: 6, retryBaseMs: 500 } });

describe('a payment confirmed while DynamoDB is unreachable', () => {
  it('is refused with a 5xx, delivered again by the provider, and credited once', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '0' });
    const created = await runtime.call('POST', '/api/v1/billing/top-ups', { apiKey, body: { amount_usd: 20 } });
    expect(created.status).toBe(201);

    const outage = await proxy.outage(OUTAGE_MS);
    await fetch(`${runtime.payments.url}/_sim/sessions/${created.body.provider_session_id}/pay`, { method: 'POST' });
    await outage.over;
    await runtime.payments.settled();
    const completed = runtime.payments.events.find((event) => event.type === 'checkout.session.completed')!;
    const credited = await eventually(async () => {
      const account = await getAccount(runtime.deps, accountId);
      return account && account.balance > 0 ? account : undefined;
    }, 'the credit');

    expect(completed.answers[0]).toBeGreaterThanOrEqual(500);
    expect(completed.answers.at(-1)).toBe(200);
    expect(credited.balance).toBe(20_000_000);
    expect((await listLedgerEntries(runtime.deps, accountId)).filter((entry) => entry.kind === 'top_up')).toHaveLength(1);
  });
});
