import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mailsTo } from '../support/mailbox';
import { startReceiver, type Receiver } from '../support/receiver';
import { charge } from '../../shared/domain/billing';
import { useTestRuntime } from '../support/runtime';
import { setBillingState } from '../support/accounts';
import { openSession } from '../../shared/domain/accounts';
import { reviewFunding } from '../../shared/domain/funding';
import { reconcileTopUps } from '../../shared/domain/payments';
import { getAccount } from '../../shared/store/accounts';
import { listLedgerEntries } from '../../shared/store/ledger';
import { getTopUp } from '../../shared/store/top-ups';

const mailDir = mkdtempSync(join(tmpdir(), 'payments-mail-'));
// A provider slower than a second is a timeout here: the tests make it that slow rather than wait for the default.
const runtime = useTestRuntime({ mailDir, env: { PAYMENTS_TIMEOUT_MS: '1000' } });
afterAll(() => rmSync(mailDir, { recursive: true, force: true }));
const WEBHOOK = '/api/v1/billing/stripe/webhook';

async function sim(path: string, body: Record<string, unknown> = {}, method = 'POST') {
  const response = await fetch(`${runtime.payments.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: method === 'GET' ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function eventually<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function topUp(apiKey: string, amount = 20, extra: Record<string, unknown> = {}) {
  const created = await runtime.call('POST', '/api/v1/billing/top-ups', { apiKey, body: { amount_usd: amount, ...extra } });
  expect(created.status).toBe(201);
  return created.body as { top_up_id: string; provider_session_id: string; checkout_url: string };
}

async function paid(apiKey: string, topUpId: string) {
  return eventually(`top-up ${topUpId} to be paid`, async () => {
    const { body } = await runtime.call('GET', `/api/v1/billing/top-ups/${topUpId}`, { apiKey });
    return body.status === 'paid' ? body : undefined;
  });
}

const balanceOf = async (accountId: string) => (await getAccount(runtime.deps, accountId))!.balance;
const entriesOf = async (accountId: string, kind: string) =>
  (await listLedgerEntries(runtime.deps, accountId)).filter((entry) => entry.kind === kind);

/** A webhook body signed as the provider signs it, `ageSeconds` ago, with `secret`. */
function signed(body: string, secret = runtime.payments.webhookSecret, ageSeconds = 0) {
  const t = Math.floor(Date.now() / 1000) - ageSeconds;
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

function completedEvent(
  sessionId: string,
  metadata: Record<string, string>,
  amountCents: number,
  eventId = `evt_${Math.random().toString(16).slice(2)}`,
) {
  return JSON.stringify({
    id: eventId,
    object: 'event',
    type: 'checkout.session.completed',
    data: {
      object: {
        id: sessionId,
        object: 'checkout.session',
        amount_total: amountCents,
        payment_status: 'paid',
        payment_intent: `pi_${Math.random().toString(16).slice(2)}`,
        metadata,
      },
    },
  });
}

/** A new account funded only by a paid card top-up of `amount` dollars. */
async function fundedByCard(amount: number, extra: Record<string, unknown> = {}) {
  const account = await runtime.newAccount({ depositUsd: '0' });
  const { top_up_id, provider_session_id } = await topUp(account.apiKey, amount, extra);
  await sim(`/_sim/sessions/${provider_session_id}/pay`);
  await paid(account.apiKey, top_up_id);
  const { payment_intent_id: paymentIntentId } = (await getTopUp(runtime.deps, top_up_id))!;
  return { ...account, topUpId: top_up_id, paymentIntentId: paymentIntentId! };
}

describe('POST /api/v1/billing/top-ups', () => {
  it('opens a checkout and credits the balance once, only when the provider reports the payment', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '0' });

    const created = await runtime.call('POST', '/api/v1/billing/top-ups', { apiKey, body: { amount_usd: 20 } });
    const page = await fetch(created.body.checkout_url);
    const beforePaying = await balanceOf(accountId);
    const pay = await fetch(`${created.body.checkout_url}/pay`, { method: 'POST', redirect: 'manual' });
    const view = await paid(apiKey, created.body.top_up_id);
    await runtime.payments.settled();
    const billing = await runtime.call('GET', '/api/v1/billing', { apiKey });

    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      top_up_id: expect.stringMatching(/^tu_[0-9a-f]{32}$/),
      status: 'open',
      amount_usd: '20.00',
      kind: 'checkout',
      provider_session_id: expect.stringMatching(/^cs_test_/),
      checkout_url: expect.stringContaining(`${runtime.payments.url}/pay/cs_test_`),
    });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Pay $20.00');
    expect(beforePaying).toBe(0);
    expect(pay.status).toBe(303);
    expect(pay.headers.get('location')).toContain(`top_up=${created.body.top_up_id}`);
    expect(view).toMatchObject({ status: 'paid', checkout_url: null, paid_at: expect.any(String) });
    expect(await balanceOf(accountId)).toBe(20_000_000);
    expect(await entriesOf(accountId, 'top_up')).toEqual([
      expect.objectContaining({ entry_id: `top-up#${created.body.provider_session_id}`, amount: 20_000_000 }),
    ]);
    expect(billing.body).toMatchObject({
      balance_usd: '20.00',
      total_deposited_usd: '20.00',
      deposit_met: true,
      billing_paused: false,
      burn_rate_usd_per_hour: '0.00',
      runway_hours: null,
      exhausts_at: null,
      top_ups: [expect.objectContaining({ top_up_id: created.body.top_up_id, status: 'paid' })],
      top_up_limits: { min_usd: 5, max_usd: 1000, presets_usd: [10, 20, 50, 100] },
    });
  });

  it('credits once when the provider delivers the same event 10 times at once, and again later', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '0' });
    const { top_up_id, provider_session_id } = await topUp(apiKey, 15);
    await sim(`/_sim/sessions/${provider_session_id}/pay`);
    await paid(apiKey, top_up_id);
    await runtime.payments.settled();
    const completed = runtime.payments.events.find((e) => e.type === 'checkout.session.completed' && e.answers.length > 0)!;

    const [burst, later] = [
      await sim(`/_sim/events/${completed.id}/resend`, { times: 10 }),
      await sim(`/_sim/events/${completed.id}/resend`, { times: 3 }),
    ];

    expect(burst.body.delivered).toBe(10);
    expect(later.body.delivered).toBe(3);
    expect(await balanceOf(accountId)).toBe(15_000_000);
    expect(await entriesOf(accountId, 'top_up')).toHaveLength(1);
  });

  it('credits once when several different events report the same payment concurrently', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '0' });
    const { top_up_id, provider_session_id } = await topUp(apiKey, 12);
    const metadata = { account_id: accountId, top_up_id };
    const bodies = Array.from({ length: 10 }, () => completedEvent(provider_session_id, metadata, 1200));

    const answers = await Promise.all(
      bodies.map((body) => runtime.call('POST', WEBHOOK, { rawBody: body, headers: { 'stripe-signature': signed(body) } })),
    );

    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.filter((a) => a.body.outcome === 'applied')).toHaveLength(1);
    expect(await balanceOf(accountId)).toBe(12_000_000);
    expect(await entriesOf(accountId, 'top_up')).toHaveLength(1);
  });

  it.each([
    { case: 'signed with another secret', signature: (body: string) => signed(body, 'whsec_not-the-one') },
    { case: 'signed 10 minutes ago', signature: (body: string) => signed(body, undefined, 600) },
    { case: 'dated 10 minutes ahead', signature: (body: string) => signed(body, undefined, -600) },
    {
      case: 'signed 10 minutes ahead behind a current timestamp',
      signature: (body: string) => {
        const now = Math.floor(Date.now() / 1000);
        return `t=${now},${signed(body, undefined, -600)}`;
      },
    },
    { case: 'unsigned', signature: () => undefined },
    { case: 'with a garbled header', signature: () => 't=abc,v1=zz' },
  ])('answers 400 and credits nothing for an event $case', async ({ signature }) => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '0' });
    const { top_up_id, provider_session_id } = await topUp(apiKey, 10);
    const body = completedEvent(provider_session_id, { account_id: accountId, top_up_id }, 1000);
    const header = signature(body);

    const answer = await runtime.call('POST', WEBHOOK, { rawBody: body, headers: header ? { 'stripe-signature': header } : {} });

    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('Invalid signature');
    expect(await balanceOf(accountId)).toBe(0);
  });

  it('refuses a paid event naming another account, another amount or no top-up of ours, and credits nothing', async () => {
    const owner = await runtime.newAccount({ depositUsd: '0' });
    const other = await runtime.newAccount({ depositUsd: '0' });
    const { top_up_id, provider_session_id } = await topUp(owner.apiKey, 10);
    const cases = [
      completedEvent(provider_session_id, { account_id: other.accountId, top_up_id }, 1000),
      completedEvent(provider_session_id, { account_id: owner.accountId, top_up_id }, 100_000),
      completedEvent(provider_session_id, { account_id: owner.accountId, top_up_id: `tu_${'0'.repeat(32)}` }, 1000),
      completedEvent('cs_test_someone_else', { account_id: owner.accountId, top_up_id }, 1000),
    ];

    const answers = await Promise.all(
      cases.map((body) => runtime.call('POST', WEBHOOK, { rawBody: body, headers: { 'stripe-signature': signed(body) } })),
    );
    const view = await runtime.call('GET', `/api/v1/billing/top-ups/${top_up_id}`, { apiKey: owner.apiKey });

    expect(answers.map((a) => [a.status, a.body.outcome])).toEqual(Array(4).fill([200, 'refused']));
    expect(await balanceOf(owner.accountId)).toBe(0);
    expect(await balanceOf(other.accountId)).toBe(0);
    expect(view.body.status).toBe('open');
  });

  it('credits nothing for a declined card, and the checkout stays open', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '0' });
    const { top_up_id, checkout_url } = await topUp(apiKey, 10);

    const declined = await fetch(`${checkout_url}/decline`, { method: 'POST' });
    await runtime.payments.settled();
    const view = await runtime.call('GET', `/api/v1/billing/top-ups/${top_up_id}`, { apiKey });

    expect(declined.status).toBe(402);
    expect(await declined.text()).toContain('Your card was declined.');
    expect(view.body.status).toBe('open');
    expect(await balanceOf(accountId)).toBe(0);
  });

  it('marks a checkout left unpaid expired', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '0' });
    const { top_up_id, provider_session_id } = await topUp(apiKey, 10);

    await sim(`/_sim/sessions/${provider_session_id}/expire`);
    const view = await eventually('the top-up to expire', async () => {
      const { body } = await runtime.call('GET', `/api/v1/billing/top-ups/${top_up_id}`, { apiKey });
      return body.status === 'expired' ? body : undefined;
    });

    expect(view).toMatchObject({ status: 'expired', checkout_url: null });
  });

  it.each([
    { body: { amount_usd: 4.99 }, error: 'amount_usd must be at least 5' },
    { body: { amount_usd: 1000.01 }, error: 'amount_usd must be at most 1000' },
    { body: { amount_usd: 10.001 }, error: 'amount_usd has at most two decimals' },
    { body: { amount_usd: '20' }, error: 'amount_usd must be a number of dollars' },
    { body: {}, error: 'amount_usd is required' },
  ])('answers 400 "$error" for $body', async ({ body, error }) => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '0' });

    const answer = await runtime.call('POST', '/api/v1/billing/top-ups', { apiKey, body });

    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe(error);
  });

  it.each([
    { provider: 401, times: 1, status: 503, error: 'Payments are unavailable' },
    { provider: 503, times: 3, status: 503, error: 'Payments are unavailable' },
    { provider: 400, times: 1, status: 502, error: 'The payment provider refused the checkout' },
  ])('answers $status "$error" when the provider refuses the checkout with $provider, and closes the top-up as failed', async (fault) => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '0' });
    await sim('/_sim/faults', { status: fault.provider, times: fault.times });
    onTestFinished(() => sim('/_sim/faults', { times: 0 }).then(() => undefined));

    const answer = await runtime.call('POST', '/api/v1/billing/top-ups', { apiKey, body: { amount_usd: 20 } });
    const billing = await runtime.call('GET', '/api/v1/billing', { apiKey });

    expect([answer.status, answer.body.error]).toEqual([fault.status, fault.error]);
    expect(billing.body.top_ups).toEqual([
      expect.objectContaining({
        status: 'failed',
        checkout_url: null,
        failure_reason: 'The payment provider could not open the checkout.',
      }),
    ]);
  });

  it('takes the console session with its CSRF token, and refuses it without', async () => {
    const { accountId } = await runtime.newAccount({ depositUsd: '0' });
    const { session, csrfToken } = await openSession(runtime.deps, accountId);
    const cookie = { cookie: `session=${session}` };

    const withToken = await runtime.call('POST', '/api/v1/billing/top-ups', {
      body: { amount_usd: 25 },
      headers: { ...cookie, 'x-csrftoken': csrfToken },
    });
    const without = await runtime.call('POST', '/api/v1/billing/top-ups', { body: { amount_usd: 25 }, headers: cookie });
    const read = await runtime.call('GET', '/api/v1/billing', { headers: cookie });

    expect(withToken.status).toBe(201);
    expect(without.status).toBe(403);
    expect(without.body.error).toBe('CSRF validation failed');
    expect(read.status).toBe(200);
    expect(read.body.top_ups).toHaveLength(1);
  });

  it('asks a caller with neither an API key nor a session for the Authorization header', async () => {
    const answer = await runtime.call('GET', '/api/v1/billing');

    expect([answer.status, answer.body.error]).toEqual([401, 'Missing or malformed Authorization header']);
  });
});

describe('GET /api/v1/billing/top-ups/{id}', () => {
  it('answers 404 for another account’s top-up and for an id that is not one', async () => {
    const owner = await runtime.newAccount({ depositUsd: '0' });
    const other = await runtime.newAccount({ depositUsd: '0' });
    const { top_up_id } = await topUp(owner.apiKey, 10);

    const foreign = await runtime.call('GET', `/api/v1/billing/top-ups/${top_up_id}`, { apiKey: other.apiKey });
    const garbage = await runtime.call('GET', '/api/v1/billing/top-ups/..%2Fkeys', { apiKey: owner.apiKey });

    expect([foreign.status, foreign.body.error]).toEqual([404, 'Top-up not found']);
    expect([garbage.status, garbage.body.error]).toEqual([404, 'Top-up not found']);
  });
});

describe('refunds and disputes', () => {
  it('debits each refund once, whatever order the refund events arrive in', async () => {
    const { accountId, paymentIntentId } = await fundedByCard(20);
    await sim(`/_sim/payment_intents/${paymentIntentId}/refund`, { amount: 400 });
    await sim(`/_sim/payment_intents/${paymentIntentId}/refund`, { amount: 300 });
    await runtime.payments.settled();
    const [first, second] = runtime.payments.events.filter((e) => e.type === 'charge.refunded').slice(-2);

    // The later event (700 cents refunded in all) again, then the earlier (400), each several times at once.
    await sim(`/_sim/events/${second!.id}/resend`, { times: 5 });
    await sim(`/_sim/events/${first!.id}/resend`, { times: 5 });

    expect(await balanceOf(accountId)).toBe(13_000_000);
    // One entry per refunded total booked: 400 then 700, or 700 alone when the later event came first.
    const refunds = await entriesOf(accountId, 'refund');
    expect(refunds.reduce((sum, entry) => sum + entry.amount, 0)).toBe(-7_000_000);
    expect(refunds.map((entry) => entry.entry_id).at(-1)).toMatch(/^refund#ch_[0-9a-f]+#700$/);
  });

  it.each([
    { type: 'charge.refunded', object: { id: 'ch_0a1b2c', object: 'charge', payment_intent: null, amount_refunded: 500 } },
    {
      type: 'charge.dispute.created',
      object: { id: 'dp_0a1b2c', object: 'dispute', payment_intent: null, amount: 500, status: 'needs_response', balance_transactions: [] },
    },
  ])('answers 200 refused to $type for a charge without a payment intent', async ({ type, object }) => {
    const body = JSON.stringify({ id: `evt_${Math.random().toString(16).slice(2)}`, object: 'event', type, data: { object } });

    const answer = await runtime.call('POST', WEBHOOK, { rawBody: body, headers: { 'stripe-signature': signed(body) } });

    expect([answer.status, answer.body.outcome]).toEqual([200, 'refused']);
  });

  it('debits a dispute and its fee at once, pauses billing at zero, and credits both back when the dispute is won', async () => {
    const { accountId, apiKey, paymentIntentId } = await fundedByCard(10);

    const dispute = await sim(`/_sim/payment_intents/${paymentIntentId}/dispute`);
    await runtime.payments.settled();
    const during = await runtime.call('GET', '/api/v1/billing', { apiKey });
    await sim(`/_sim/events/${runtime.payments.events.at(-1)!.id}/resend`, { times: 4 });
    const afterReplays = await balanceOf(accountId);
    await sim(`/_sim/disputes/${dispute.body.id}/close`, { status: 'won' });
    await runtime.payments.settled();
    const after = await runtime.call('GET', '/api/v1/billing', { apiKey });

    expect(during.body).toMatchObject({ balance_usd: '-15.00', billing_paused: true });
    expect(afterReplays).toBe(-15_000_000);
    expect(after.body).toMatchObject({ balance_usd: '10.00', billing_paused: false });
    expect((await entriesOf(accountId, 'dispute')).map((e) => e.amount).sort((a, b) => a - b)).toEqual([-25_000_000, 25_000_000]);
  });

  it('returns nothing for a won dispute that was never opened, and books its late opening once', async () => {
    const { accountId, paymentIntentId } = await fundedByCard(10);
    const dispute = (type: string, status: string) =>
      JSON.stringify({
        id: `evt_${Math.random().toString(16).slice(2)}`,
        object: 'event',
        type,
        data: {
          object: {
            id: 'dp_0d1e2f',
            object: 'dispute',
            payment_intent: paymentIntentId,
            amount: 1000,
            status,
            balance_transactions: [{ fee: 1500 }],
          },
        },
      });
    const deliver = (body: string) => runtime.call('POST', WEBHOOK, { rawBody: body, headers: { 'stripe-signature': signed(body) } });

    const won = await deliver(dispute('charge.dispute.closed', 'won'));
    const opened = await deliver(dispute('charge.dispute.created', 'needs_response'));

    expect([won.status, won.body.outcome]).toEqual([200, 'applied']);
    expect([opened.status, opened.body.outcome]).toEqual([200, 'duplicate']);
    expect(await balanceOf(accountId)).toBe(10_000_000);
    expect((await entriesOf(accountId, 'dispute')).map((entry) => [entry.entry_id, entry.amount])).toEqual([
      ['dispute#dp_0d1e2f', -25_000_000],
      ['dispute-won#dp_0d1e2f', 25_000_000],
    ]);
  });

  it('leaves the balance debited when the dispute is lost', async () => {
    const { accountId, paymentIntentId } = await fundedByCard(10);

    const dispute = await sim(`/_sim/payment_intents/${paymentIntentId}/dispute`);
    await sim(`/_sim/disputes/${dispute.body.id}/close`, { status: 'lost' });
    await runtime.payments.settled();

    expect(await balanceOf(accountId)).toBe(-15_000_000);
  });
});

describe('debits that arrive before their payment', () => {
  it.each([
    {
      case: 'a refund',
      debit: (paymentIntentId: string) => sim(`/_sim/payment_intents/${paymentIntentId}/refund`),
      kind: 'refund',
      amount: -20_000_000,
    },
    {
      case: 'a dispute',
      debit: (paymentIntentId: string) => sim(`/_sim/payment_intents/${paymentIntentId}/dispute`),
      kind: 'dispute',
      amount: -35_000_000,
    },
  ])('credits the payment first when $case arrives before it: no pause, the server stays active', async ({ debit, kind, amount }) => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '20' });
    const instance = await runtime.activeInstance(apiKey);
    const { top_up_id, provider_session_id } = await topUp(apiKey, 20);
    await sim('/_sim/hold', { type: 'checkout.session.completed' });
    const payment = await sim(`/_sim/sessions/${provider_session_id}/pay`);

    await debit(payment.body.payment_intent);
    await runtime.payments.settled();
    const released = await sim('/_sim/release', { type: 'checkout.session.completed' });
    await runtime.payments.settled();
    const billing = await runtime.call('GET', '/api/v1/billing', { apiKey });
    const server = await runtime.call('GET', `/api/v1/instances/${instance.instance_id}`, { apiKey });
    const completed = runtime.payments.events.find((event) => event.id === released.body.released[0]);

    expect(billing.body.billing_paused).toBe(false);
    expect(billing.body.top_ups[0]).toMatchObject({ top_up_id, status: 'paid' });
    expect(server.body.status).toBe('active');
    expect(completed?.answers).toEqual([200]);
    expect((await entriesOf(accountId, 'top_up')).map((entry) => [entry.entry_id, entry.amount])).toEqual([
      [`top-up#${provider_session_id}`, 20_000_000],
    ]);
    expect((await entriesOf(accountId, kind)).map((entry) => entry.amount)).toEqual([amount]);
  });
});

describe('auto-recharge', () => {
  /** A new account whose card a paid top-up of `amount` dollars saved, and its console session. */
  async function withSavedCard(amount: number) {
    const account = await runtime.newAccount({ depositUsd: '0' });
    const { top_up_id, provider_session_id } = await topUp(account.apiKey, amount, { save_card: true });
    await sim(`/_sim/sessions/${provider_session_id}/pay`);
    await paid(account.apiKey, top_up_id);
    await eventually(
      'the card to be saved',
      async () => (await getAccount(runtime.deps, account.accountId))?.payment_method_id ?? undefined,
    );
    const { session, csrfToken } = await openSession(runtime.deps, account.accountId);
    return { ...account, headers: { cookie: `session=${session}`, 'x-csrftoken': csrfToken } };
  }
  const chargesMade = () => runtime.payments.events.filter((e) => e.type === 'payment_intent.succeeded').length;
  const rechargesOf = async (apiKey: string) =>
    ((await runtime.call('GET', '/api/v1/billing', { apiKey })).body.top_ups as { kind: string; status: string; amount_usd: string }[])
      .filter((t) => t.kind === 'auto_recharge')
      .map((t) => [t.status, t.amount_usd]);

  it('charges the card once when it is turned on by six requests at once below the threshold', async () => {
    const account = await withSavedCard(10);
    const before = chargesMade();

    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        runtime.call('POST', '/api/v1/billing/auto-recharge', {
          headers: account.headers,
          body: { enabled: true, threshold_usd: 15, amount_usd: 20 },
        }),
      ),
    );
    await runtime.payments.settled();

    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(chargesMade() - before).toBe(1);
    expect(await rechargesOf(account.apiKey)).toEqual([['paid', '20.00']]);
    expect(await balanceOf(account.accountId)).toBe(30_000_000);
  });

  it('charges the card once when two reviews find the balance at the threshold together', async () => {
    const account = await withSavedCard(10);
    const turnedOn = await runtime.call('POST', '/api/v1/billing/auto-recharge', {
      headers: account.headers,
      body: { enabled: true, threshold_usd: 5, amount_usd: 20 },
    });
    await setBillingState(runtime.deps, account.accountId, { balance: 5_000_000 });
    const before = chargesMade();

    await Promise.all([reviewFunding(runtime.deps, account.accountId), reviewFunding(runtime.deps, account.accountId)]);
    await runtime.payments.settled();

    expect(turnedOn.status).toBe(200);
    expect(chargesMade() - before).toBe(1);
    expect(await rechargesOf(account.apiKey)).toEqual([['paid', '20.00']]);
  });

  it('charges again only once the balance has been above the threshold since the last charge', async () => {
    const account = await withSavedCard(10);
    await runtime.call('POST', '/api/v1/billing/auto-recharge', {
      headers: account.headers,
      body: { enabled: true, threshold_usd: 5, amount_usd: 20 },
    });
    const before = chargesMade();

    // The charge is credited (the crossing ends), and the balance falls to the threshold again: a second crossing.
    await setBillingState(runtime.deps, account.accountId, { balance: 5_000_000 });
    await reviewFunding(runtime.deps, account.accountId);
    await runtime.payments.settled();
    await setBillingState(runtime.deps, account.accountId, { balance: 5_000_000 });
    await reviewFunding(runtime.deps, account.accountId);
    await runtime.payments.settled();

    expect(chargesMade() - before).toBe(2);
    expect(await rechargesOf(account.apiKey)).toEqual([
      ['paid', '20.00'],
      ['paid', '20.00'],
    ]);
  });

  it('answers 400 and charges nothing for an amount below the threshold', async () => {
    const account = await withSavedCard(10);
    const before = chargesMade();

    const answer = await runtime.call('POST', '/api/v1/billing/auto-recharge', {
      headers: account.headers,
      body: { enabled: true, threshold_usd: 1000, amount_usd: 5 },
    });
    await runtime.payments.settled();

    expect([answer.status, answer.body.error]).toEqual([400, 'amount_usd must be at least threshold_usd']);
    expect(chargesMade() - before).toBe(0);
    expect(await rechargesOf(account.apiKey)).toEqual([]);
  });

  it('charges the saved card at the threshold, and turns itself off after 3 declines in a row', async () => {
    const account = await withSavedCard(10);
    const card = (await getAccount(runtime.deps, account.accountId))!;

    const turnedOn = await runtime.call('POST', '/api/v1/billing/auto-recharge', {
      headers: account.headers,
      body: { enabled: true, threshold_usd: 15, amount_usd: 20 },
    });
    await runtime.payments.settled();
    const recharged = await eventually('the recharge to be credited', async () =>
      (await balanceOf(account.accountId)) === 30_000_000 ? true : undefined,
    );
    await sim(`/_sim/customers/${card.payment_customer_id}/decline`, { on: true });
    await runtime.call('POST', '/api/v1/billing/auto-recharge', {
      headers: account.headers,
      body: { enabled: true, threshold_usd: 50, amount_usd: 50 },
    });
    for (let i = 0; i < 3; i++) await reviewFunding(runtime.deps, account.accountId);
    await runtime.payments.settled();
    const afterDeclines = await runtime.call('GET', '/api/v1/billing', { apiKey: account.apiKey });
    const chargesBefore = runtime.payments.events.filter((e) => e.type.startsWith('payment_intent.')).length;
    await reviewFunding(runtime.deps, account.accountId);

    expect(turnedOn.status).toBe(200);
    expect(turnedOn.body.auto_recharge).toMatchObject({ enabled: true, threshold_usd: '15.00', amount_usd: '20.00' });
    expect(recharged).toBe(true);
    expect(afterDeclines.body.balance_usd).toBe('30.00');
    expect(afterDeclines.body.auto_recharge).toMatchObject({
      enabled: false,
      failures: 3,
      disabled_reason: 'Turned off after 3 failed attempts in a row (last: Your card was declined.)',
    });
    expect(
      afterDeclines.body.top_ups
        .filter((t: { kind: string; status: string }) => t.kind === 'auto_recharge')
        .map((t: { status: string }) => t.status),
    ).toEqual(['failed', 'failed', 'failed', 'paid']);
    expect(runtime.payments.events.filter((e) => e.type.startsWith('payment_intent.')).length).toBe(chargesBefore);
  });

  it('answers 409 when no card is saved', async () => {
    const { accountId } = await runtime.newAccount({ depositUsd: '0' });
    const { session, csrfToken } = await openSession(runtime.deps, accountId);

    const answer = await runtime.call('POST', '/api/v1/billing/auto-recharge', {
      headers: { cookie: `session=${session}`, 'x-csrftoken': csrfToken },
      body: { enabled: true, threshold_usd: 5, amount_usd: 10 },
    });

    expect([answer.status, answer.body.error]).toEqual([409, 'No saved card']);
  });

  it('refuses an API key as key management does, and the session without its CSRF token, charging nothing', async () => {
    const account = await withSavedCard(10);
    const before = chargesMade();
    const body = { enabled: true, threshold_usd: 15, amount_usd: 20 };

    const withKey = await runtime.call('POST', '/api/v1/billing/auto-recharge', { apiKey: account.apiKey, body });
    const withoutToken = await runtime.call('POST', '/api/v1/billing/auto-recharge', {
      headers: { cookie: account.headers.cookie },
      body,
    });
    await runtime.payments.settled();
    const billing = await runtime.call('GET', '/api/v1/billing', { apiKey: account.apiKey });

    expect([withKey.status, withKey.body.error]).toEqual([401, 'API keys are not accepted here: key management needs a session cookie']);
    expect([withoutToken.status, withoutToken.body.error]).toEqual([403, 'CSRF validation failed']);
    expect(billing.body.auto_recharge).toBeNull();
    expect(chargesMade() - before).toBe(0);
  });

  it('e-mails the account each time auto-recharge is set, on or off', async () => {
    const account = await withSavedCard(50);
    const { email } = (await getAccount(runtime.deps, account.accountId))!;

    const on = await runtime.call('POST', '/api/v1/billing/auto-recharge', {
      headers: account.headers,
      body: { enabled: true, threshold_usd: 10, amount_usd: 25 },
    });
    const off = await runtime.call('POST', '/api/v1/billing/auto-recharge', {
      headers: account.headers,
      body: { enabled: false, threshold_usd: 10, amount_usd: 25 },
    });
    const mails = (await mailsTo(mailDir, email)).filter((mail) => mail.subject.startsWith('Auto-recharge'));

    expect([on.status, off.status]).toEqual([200, 200]);
    // Written in the same millisecond, two files could list in either order.
    expect(mails.map((mail) => mail.subject).sort()).toEqual(['Auto-recharge was turned off', 'Auto-recharge was turned on']);
    expect(mails.find((mail) => mail.subject === 'Auto-recharge was turned on')?.text).toContain(
      'each time your balance falls to $10.00 or below, your saved card is charged $25.00',
    );
  });
});

describe('account events', () => {
  async function subscribed(apiKey: string, events: string[]): Promise<Receiver> {
    const receiver = await startReceiver();
    onTestFinished(() => receiver.close());
    const created = await runtime.call('POST', '/api/v1/webhooks', { apiKey, body: { url: receiver.url, events } });
    expect(created.status).toBe(201);
    receiver.secret = created.body.secret;
    return receiver;
  }
  const typesOf = (receiver: Receiver) => receiver.received.map((delivery) => delivery.event.type);

  it('tells the account by webhook and by e-mail when billing pauses and when it resumes', async () => {
    const { apiKey, accountId, paymentIntentId } = await fundedByCard(10);
    const { email } = (await getAccount(runtime.deps, accountId))!;
    const receiver = await subscribed(apiKey, ['account.billing_paused', 'account.billing_resumed']);

    const dispute = await sim(`/_sim/payment_intents/${paymentIntentId}/dispute`);
    await eventually('the pause to be told', async () => (receiver.received.length === 1 ? true : undefined));
    await sim(`/_sim/disputes/${dispute.body.id}/close`, { status: 'won' });
    await eventually('the resumption to be told', async () => (receiver.received.length === 2 ? true : undefined));
    const mails = await eventually('both e-mails', async () => {
      const found = await mailsTo(mailDir, email);
      return found.length === 2 ? found : undefined;
    });

    expect(typesOf(receiver)).toEqual(['account.billing_paused', 'account.billing_resumed']);
    expect(receiver.received.map((delivery) => [delivery.verified, delivery.event.data])).toEqual([
      [true, { balance_usd: '-15.00' }],
      [true, { balance_usd: '10.00' }],
    ]);
    expect(receiver.received[0]!.event).toMatchObject({ account_id: accountId, instance_id: null, sequence: null });
    expect(mails.map((mail) => mail.subject)).toEqual(['Billing paused: your servers are being powered off', 'Billing resumed']);
    expect(mails[0]!.text).toContain('#/billing');
  });

  it('warns once as the runway falls under 24 hours, and once more under 1 hour', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '10' });
    const { email } = (await getAccount(runtime.deps, accountId))!;
    const receiver = await subscribed(apiKey, ['account.balance_low']);
    await runtime.activeInstance(apiKey);
    const { body } = await runtime.call('GET', '/api/v1/billing', { apiKey });
    const burn: number = body.burn_rate_micros_per_hour;
    const leave = async (micros: number) =>
      charge(runtime.deps, accountId, (await getAccount(runtime.deps, accountId))!.balance - micros, 'Test: runway');

    await reviewFunding(runtime.deps, accountId);
    await leave(burn * 10);
    await reviewFunding(runtime.deps, accountId);
    await reviewFunding(runtime.deps, accountId);
    await leave(Math.floor(burn / 2));
    await reviewFunding(runtime.deps, accountId);
    await reviewFunding(runtime.deps, accountId);
    await eventually('two warnings', async () => (receiver.received.length >= 2 ? true : undefined));
    const billing = await runtime.call('GET', '/api/v1/billing', { apiKey });
    const mails = await eventually('both e-mails', async () => {
      const found = await mailsTo(mailDir, email);
      return found.length >= 2 ? found : undefined;
    });

    expect(burn).toBeGreaterThan(0);
    // Deliveries and e-mails are sent independently and may arrive in either order: the events say when each happened.
    const byCommitTime = [...receiver.received].sort((a, b) => a.event.time.localeCompare(b.event.time));
    expect(byCommitTime.map((delivery) => delivery.event.data.level)).toEqual(['below_24h', 'below_1h']);
    expect(billing.body).toMatchObject({ balance_notice: 'below_1h', runway_hours: 0.5, exhausts_at: expect.any(String) });
    expect(mails.map((mail) => mail.subject).sort()).toEqual([
      'Your balance runs out in less than a day',
      'Your balance runs out in less than an hour',
    ]);
  });
});

describe('reconcileTopUps', () => {
  const WEBHOOK = () => `${runtime.baseUrl}/api/v1/billing/stripe/webhook`;
  /** The service three minutes from now: past the webhook's grace. */
  const later = () => ({ ...runtime.deps, clock: { now: () => new Date(Date.now() + 3 * 60_000) } });

  it('credits a paid top-up whose webhook never arrived, once, and closes one that expired', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '0' });
    const paidOne = await topUp(apiKey, 30);
    const expiredOne = await topUp(apiKey, 40);
    runtime.payments.setWebhookUrl('http://127.0.0.1:9/nowhere');
    try {
      await sim(`/_sim/sessions/${paidOne.provider_session_id}/pay`);
      await sim(`/_sim/sessions/${expiredOne.provider_session_id}/expire`);
      await runtime.payments.settled();
    } finally {
      runtime.payments.setWebhookUrl(WEBHOOK());
    }
    const before = await balanceOf(accountId);

    const report = await reconcileTopUps(later());
    const again = await reconcileTopUps(later());
    const lost = runtime.payments.events.find((e) => e.type === 'checkout.session.completed' && e.answers.every((status) => status === 0))!;
    await sim(`/_sim/events/${lost.id}/resend`, { times: 3 });
    const views = await Promise.all(
      [paidOne, expiredOne].map(
        async ({ top_up_id }) => (await runtime.call('GET', `/api/v1/billing/top-ups/${top_up_id}`, { apiKey })).body.status,
      ),
    );

    expect(before).toBe(0);
    expect(report).toMatchObject({ credited: 1, closed: 1, oldestUncreditedMs: expect.any(Number) });
    expect(report.oldestUncreditedMs).toBeGreaterThanOrEqual(3 * 60_000);
    expect(again).toMatchObject({ credited: 0, closed: 0 });
    expect(views).toEqual(['paid', 'expired']);
    expect(await balanceOf(accountId)).toBe(30_000_000);
    expect(await entriesOf(accountId, 'top_up')).toHaveLength(1);
  });

  it('attaches a checkout whose opening timed out, so that the top-up shows it and its payment credits', async () => {
    const { apiKey, accountId } = await runtime.newAccount({ depositUsd: '0' });
    await sim('/_sim/faults', { delay_ms: 1500, times: 3 });
    onTestFinished(() => sim('/_sim/faults', { times: 0 }).then(() => undefined));

    const created = await runtime.call('POST', '/api/v1/billing/top-ups', { apiKey, body: { amount_usd: 20 } });
    const [lost] = (await runtime.call('GET', '/api/v1/billing', { apiKey })).body.top_ups;
    await reconcileTopUps(later());
    const found = await runtime.call('GET', `/api/v1/billing/top-ups/${lost.top_up_id}`, { apiKey });
    await sim(`/_sim/sessions/${found.body.provider_session_id}/pay`);
    const credited = await paid(apiKey, lost.top_up_id);

    expect(created.status).toBe(503);
    expect(lost).toMatchObject({ status: 'open', provider_session_id: null, checkout_url: null });
    expect(found.body).toMatchObject({
      status: 'open',
      provider_session_id: expect.stringMatching(/^cs_test_/),
      checkout_url: expect.stringContaining(`${runtime.payments.url}/pay/cs_test_`),
    });
    expect(credited.status).toBe('paid');
    expect(await balanceOf(accountId)).toBe(20_000_000);
  });

  it('leaves an open checkout alone, before and after the grace', async () => {
    const { apiKey } = await runtime.newAccount({ depositUsd: '0' });
    const { top_up_id } = await topUp(apiKey, 10);

    await reconcileTopUps(runtime.deps);
    await reconcileTopUps(later());
    const view = await runtime.call('GET', `/api/v1/billing/top-ups/${top_up_id}`, { apiKey });

    expect(view.body.status).toBe('open');
  });
});
