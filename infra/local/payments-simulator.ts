import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * A payment provider on this machine that speaks the part of Stripe's API the service uses, so that the service's
 * Stripe adapter (the official `stripe` package, pointed here by its host, port and protocol settings) runs its real
 * code path: Checkout Sessions (create, retrieve, expire), off-session PaymentIntents on a saved card, PaymentIntent
 * retrieval, listing (by customer) and refunds. Its hosted checkout page has a Pay and a Decline button. Events are sent to the service's
 * webhook signed with Stripe's scheme (`Stripe-Signature: t=…,v1=HMAC-SHA256(secret, "t.body")`), and retried like
 * Stripe's (a few times here, quickly). Ids have Stripe's shapes (`cs_test_…`, `pi_…`, `ch_…`, `evt_…`, `re_…`,
 * `dp_…`, `cus_…`, `pm_…`). The signature is computed here by hand, not by the `stripe` package, so that the
 * adapter's check and this signing cannot share one mistake.
 *
 * Control routes under `/_sim/` (tests and the walk-through) pay or expire a session without the page, refund,
 * open and close disputes, make a customer's saved card decline, resend an event (many times, concurrently) and list
 * what was sent. Two switches make the provider misbehave as a real one does:
 * - `POST /_sim/faults {"status": 401|400|503…, "times": N, "delay_ms": D}`: the next N API calls answer that status
 *   with Stripe's error body for it, doing nothing; with `delay_ms` instead of `status` they are carried out and
 *   answered D ms late (past a client's timeout: an outcome the client cannot know). `{"times": 0}` clears it.
 * - `POST /_sim/hold {"type": "checkout.session.completed"}` holds back every event of that type (recorded in the
 *   event list, not delivered) until `POST /_sim/release {"type": …}` delivers those held, in order: events then
 *   arrive out of order, as the provider's do.
 */
export interface PaymentsSimulatorOptions {
  readonly port?: number;
  /** The secret API key the service must present (`sk_test_…`); a fresh one by default. */
  readonly secretKey?: string;
  /** The webhook signing secret (`whsec_…`); a fresh one by default. */
  readonly webhookSecret?: string;
  /** Delivery attempts per event before it is given up (Stripe tries for 3 days). @default 4 */
  readonly deliveryAttempts?: number;
  /** The first retry's delay; each later one doubles. @default 200 */
  readonly retryBaseMs?: number;
}

interface SentEvent {
  readonly id: string;
  readonly type: string;
  /** The answers of the service to each delivery of it (HTTP status, or 0 when it could not be reached). */
  readonly answers: number[];
}

export interface PaymentsSimulator {
  readonly url: string;
  readonly secretKey: string;
  readonly webhookSecret: string;
  /** Where events are sent; set once the service is listening. */
  setWebhookUrl(url: string): void;
  /** Every event sent so far, oldest first. */
  readonly events: readonly SentEvent[];
  /** Resolves once every delivery started so far has ended (answered, or given up). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/** Stripe's dispute fee in its test fixtures: $15. */
const DISPUTE_FEE_CENTS = 1500;

type Params = Record<string, unknown>;
type StripeObject = Record<string, unknown> & { id: string };

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const unix = () => Math.floor(Date.now() / 1000);

/** Stripe's form encoding: `a[b][0][c]=v` → `{a: {b: [{c: v}]}}`. */
function parseStripeForm(body: string): Params {
  const root: Params = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const path = key.split(/\[|\]\[|\]/).filter((part) => part !== '');
    let node: Record<string, unknown> = root;
    path.forEach((part, i) => {
      if (i === path.length - 1) {
        node[part] = value;
        return;
      }
      const next = path[i + 1]!;
      node[part] ??= /^\d+$/.test(next) ? [] : {};
      node = node[part] as Record<string, unknown>;
    });
  }
  return root;
}

const stripeError = (status: number, type: string, message: string, extra: Params = {}) => ({
  status,
  body: { error: { type, message, ...extra } },
});

interface Reply {
  readonly status: number;
  readonly body?: unknown;
  readonly html?: string;
  readonly location?: string;
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function checkoutPage(session: StripeObject, message?: string): string {
  const amount = ((session.amount_total as number) / 100).toFixed(2);
  const open = session.status === 'open';
  const action = (what: string, label: string) =>
    `<form method="post" action="/pay/${escapeHtml(session.id)}/${what}"><button type="submit" id="${what}">${label}</button></form>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Checkout</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>Pay $${amount}</h1><p>Test card 4242 4242 4242 4242 (simulated).</p>
${message ? `<p role="alert">${escapeHtml(message)}</p>` : ''}
${open ? action('pay', `Pay $${amount}`) + action('decline', 'Decline') : `<p>This checkout is ${escapeHtml(String(session.status))}.</p>`}
</main></body></html>`;
}

export async function startPaymentsSimulator(options: PaymentsSimulatorOptions = {}): Promise<PaymentsSimulator> {
  const secretKey = options.secretKey ?? `sk_test_${randomBytes(24).toString('hex')}`;
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(24).toString('hex')}`;
  const attempts = options.deliveryAttempts ?? 4;
  const retryBaseMs = options.retryBaseMs ?? 200;
  const sessions = new Map<string, StripeObject>();
  const intents = new Map<string, StripeObject>();
  const charges = new Map<string, StripeObject>();
  const disputes = new Map<string, StripeObject>();
  const customers = new Map<string, { declines: boolean; paymentMethod: string }>();
  const sentBodies = new Map<string, string>();
  const sent: SentEvent[] = [];
  const idempotent = new Map<string, Reply>();
  const deliveries = new Set<Promise<void>>();
  let webhookUrl: string | undefined;
  let selfUrl = '';
  /** The next API calls to misbehave: each answers `status` (doing nothing) or is answered `delayMs` late. */
  let faults: { times: number; status?: number; delayMs?: number } = { times: 0 };
  const heldTypes = new Set<string>();
  const held: { event: SentEvent; body: string }[] = [];

  function sign(body: string): string {
    const t = unix();
    return `t=${t},v1=${createHmac('sha256', webhookSecret).update(`${t}.${body}`).digest('hex')}`;
  }

  async function deliverOnce(event: SentEvent, body: string): Promise<boolean> {
    let status: number;
    try {
      const response = await fetch(webhookUrl!, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': sign(body), 'user-agent': 'Stripe/1.0' },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      status = response.status;
      await response.arrayBuffer();
    } catch {
      status = 0;
    }
    event.answers.push(status);
    return status >= 200 && status < 300;
  }

  function deliver(event: SentEvent, body: string): Promise<void> {
    const run = (async () => {
      if (!webhookUrl) return;
      for (let attempt = 1; attempt <= attempts; attempt++) {
        if (await deliverOnce(event, body)) return;
        await new Promise((resolve) => setTimeout(resolve, retryBaseMs * 2 ** (attempt - 1)));
      }
    })();
    deliveries.add(run);
    void run.finally(() => deliveries.delete(run));
    return run;
  }

  function emit(type: string, object: StripeObject): SentEvent {
    const event: SentEvent = { id: newId('evt'), type, answers: [] };
    const body = JSON.stringify({
      id: event.id,
      object: 'event',
      api_version: '2026-10-28.endive',
      created: unix(),
      type,
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      data: { object: structuredClone(object) },
    });
    sent.push(event);
    sentBodies.set(event.id, body);
    if (heldTypes.has(type)) held.push({ event, body });
    else void deliver(event, body);
    return event;
  }

  /** A successful card payment: its PaymentIntent and charge (and, when asked to save the card, a customer). */
  function succeed(
    amount: number,
    metadata: Params,
    customer: string | null,
    paymentMethod: string,
  ): { intent: StripeObject; charge: StripeObject } {
    const intent: StripeObject = {
      id: newId('pi'),
      object: 'payment_intent',
      amount,
      amount_received: amount,
      currency: 'usd',
      status: 'succeeded',
      customer,
      payment_method: paymentMethod,
      metadata,
      latest_charge: null,
      created: unix(),
    };
    const charge: StripeObject = {
      id: newId('ch'),
      object: 'charge',
      amount,
      amount_refunded: 0,
      refunded: false,
      currency: 'usd',
      paid: true,
      status: 'succeeded',
      payment_intent: intent.id,
      customer,
      metadata,
      created: unix(),
    };
    intent.latest_charge = charge.id;
    intents.set(intent.id, intent);
    charges.set(charge.id, charge);
    return { intent, charge };
  }

  function paySession(session: StripeObject): Reply {
    if (session.status !== 'open') return { status: 409, body: { error: `session is ${String(session.status)}` } };
    const saveCard = (session.payment_intent_data as Params | undefined)?.setup_future_usage === 'off_session';
    // Checkout makes a customer for a payment without one (`customer_creation: always`); only a card saved for later
    // can be charged off-session.
    const customer = (session.customer as string | null) ?? newId('cus');
    const paymentMethod = newId('pm');
    if (saveCard) customers.set(customer, { declines: customers.get(customer)?.declines ?? false, paymentMethod });
    const metadata = { ...((session.payment_intent_data as Params | undefined)?.metadata as Params | undefined) };
    const { intent } = succeed(session.amount_total as number, metadata, customer, paymentMethod);
    Object.assign(session, { status: 'complete', payment_status: 'paid', payment_intent: intent.id, customer });
    emit('checkout.session.completed', session);
    return { status: 200, body: session };
  }

  function createSession(params: Params): Reply {
    const items = params.line_items as Params[] | undefined;
    const price = items?.[0]?.price_data as Params | undefined;
    const amount = Number(price?.unit_amount) * Number(items?.[0]?.quantity ?? 1);
    if (params.mode !== 'payment' || !Number.isInteger(amount) || amount < 50)
      return stripeError(400, 'invalid_request_error', 'line_items[0][price_data][unit_amount] must be an integer of at least 50');
    const id = `cs_test_${randomBytes(24).toString('hex')}`;
    const session: StripeObject = {
      id,
      object: 'checkout.session',
      mode: 'payment',
      status: 'open',
      payment_status: 'unpaid',
      amount_total: amount,
      currency: String(price?.currency ?? 'usd'),
      client_reference_id: params.client_reference_id ?? null,
      customer: params.customer ?? null,
      customer_email: params.customer_email ?? null,
      metadata: params.metadata ?? {},
      payment_intent: null,
      payment_intent_data: params.payment_intent_data ?? {},
      success_url: params.success_url ?? null,
      cancel_url: params.cancel_url ?? null,
      url: `${selfUrl}/pay/${id}`,
      created: unix(),
      expires_at: Number(params.expires_at ?? unix() + 24 * 3600),
      livemode: false,
    };
    sessions.set(id, session);
    return { status: 200, body: session };
  }

  function offSessionPayment(params: Params): Reply {
    const customer = String(params.customer ?? '');
    const saved = customers.get(customer);
    const amount = Number(params.amount);
    const metadata = (params.metadata as Params | undefined) ?? {};
    if (!saved || params.payment_method !== saved.paymentMethod)
      return stripeError(400, 'invalid_request_error', 'No such payment_method for this customer');
    if (saved.declines) {
      const intent: StripeObject = {
        id: newId('pi'),
        object: 'payment_intent',
        amount,
        currency: 'usd',
        status: 'requires_payment_method',
        customer,
        metadata,
        last_payment_error: { code: 'card_declined', message: 'Your card was declined.' },
      };
      intents.set(intent.id, intent);
      emit('payment_intent.payment_failed', intent);
      return stripeError(402, 'card_error', 'Your card was declined.', { code: 'card_declined', payment_intent: intent });
    }
    const { intent } = succeed(amount, metadata, customer, saved.paymentMethod);
    emit('payment_intent.succeeded', intent);
    return { status: 200, body: intent };
  }

  function refund(intentId: string, amount: number | undefined): Reply {
    const intent = intents.get(intentId);
    const charge = intent && charges.get(intent.latest_charge as string);
    if (!charge) return stripeError(404, 'invalid_request_error', `No such payment_intent: '${intentId}'`);
    const left = (charge.amount as number) - (charge.amount_refunded as number);
    const refunded = amount ?? left;
    if (!Number.isInteger(refunded) || refunded <= 0 || refunded > left)
      return stripeError(400, 'invalid_request_error', 'Refund amount is greater than what is left to refund');
    const made: StripeObject = {
      id: newId('re'),
      object: 'refund',
      amount: refunded,
      charge: charge.id,
      payment_intent: intentId,
      status: 'succeeded',
    };
    charge.amount_refunded = (charge.amount_refunded as number) + refunded;
    charge.refunded = charge.amount_refunded === charge.amount;
    emit('charge.refunded', charge);
    return { status: 200, body: made };
  }

  function openDispute(intentId: string, amount: number | undefined): Reply {
    const intent = intents.get(intentId);
    const charge = intent && charges.get(intent.latest_charge as string);
    if (!charge) return stripeError(404, 'invalid_request_error', `No such payment_intent: '${intentId}'`);
    const dispute: StripeObject = {
      id: newId('dp'),
      object: 'dispute',
      amount: amount ?? charge.amount,
      currency: 'usd',
      charge: charge.id,
      payment_intent: intentId,
      reason: 'fraudulent',
      status: 'needs_response',
      balance_transactions: [{ id: newId('txn'), amount: -(amount ?? (charge.amount as number)), fee: DISPUTE_FEE_CENTS }],
      created: unix(),
    };
    disputes.set(dispute.id, dispute);
    emit('charge.dispute.created', dispute);
    return { status: 200, body: dispute };
  }

  function closeDispute(id: string, status: string): Reply {
    const dispute = disputes.get(id);
    if (!dispute || !['won', 'lost'].includes(status)) return { status: 404, body: { error: 'no such dispute, or status not won|lost' } };
    dispute.status = status;
    emit('charge.dispute.closed', dispute);
    return { status: 200, body: dispute };
  }

  async function resend(id: string, times: number): Promise<Reply> {
    const event = sent.find((e) => e.id === id);
    const body = sentBodies.get(id);
    if (!event || !body || !webhookUrl) return { status: 404, body: { error: 'no such event' } };
    // Concurrently, as a provider retrying from several machines would.
    const answers = await Promise.all(Array.from({ length: times }, () => deliverOnce(event, body)));
    return { status: 200, body: { delivered: answers.filter(Boolean).length } };
  }

  function release(type: string): Reply {
    heldTypes.delete(type);
    const released = held.filter((entry) => entry.event.type === type);
    for (const entry of released) {
      held.splice(held.indexOf(entry), 1);
      void deliver(entry.event, entry.body);
    }
    return { status: 200, body: { released: released.map((entry) => entry.event.id) } };
  }

  /** Stripe's error body for a status: what its client turns into its typed errors. */
  function faultReply(status: number): Reply {
    if (status === 401) return stripeError(401, 'invalid_request_error', 'Invalid API Key provided');
    if (status === 429) return stripeError(429, 'invalid_request_error', 'Too many requests');
    if (status < 500) return stripeError(status, 'invalid_request_error', 'The request was refused');
    return stripeError(status, 'api_error', 'The provider is unavailable');
  }

  const authorized = (request: IncomingMessage) => {
    const given = Buffer.from(request.headers.authorization ?? '');
    const expected = Buffer.from(`Bearer ${secretKey}`);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };

  async function api(request: IncomingMessage, path: string, params: Params): Promise<Reply> {
    if (!authorized(request)) return stripeError(401, 'invalid_request_error', 'Invalid API Key provided');
    const method = request.method ?? 'GET';
    const [, , resource, id, verb] = path.split('/');
    if (method === 'POST' && path === '/v1/checkout/sessions') return createSession(params);
    if (resource === 'checkout') {
      const [, , , , sessionId, sessionVerb] = path.split('/');
      const session = sessions.get(sessionId ?? '');
      if (!session) return stripeError(404, 'invalid_request_error', `No such checkout.session: '${sessionId}'`);
      if (method === 'GET' && !sessionVerb) return { status: 200, body: session };
      if (method === 'POST' && sessionVerb === 'expire') {
        if (session.status !== 'open') return stripeError(400, 'invalid_request_error', 'Only open sessions can be expired');
        session.status = 'expired';
        emit('checkout.session.expired', session);
        return { status: 200, body: session };
      }
    }
    if (method === 'POST' && path === '/v1/payment_intents') return offSessionPayment(params);
    if (method === 'GET' && path === '/v1/payment_intents') {
      // Stripe's list, newest first, filtered by customer: how a run counts the charges made on a saved card.
      const customer = new URL(request.url ?? '', 'http://simulator').searchParams.get('customer');
      const data = [...intents.values()].filter((intent) => customer === null || intent.customer === customer).reverse();
      return { status: 200, body: { object: 'list', data, has_more: false } };
    }
    if (method === 'GET' && resource === 'payment_intents' && id && !verb) {
      const intent = intents.get(id);
      return intent ? { status: 200, body: intent } : stripeError(404, 'invalid_request_error', `No such payment_intent: '${id}'`);
    }
    if (method === 'GET' && resource === 'charges' && id && !verb) {
      const charge = charges.get(id);
      return charge ? { status: 200, body: charge } : stripeError(404, 'invalid_request_error', `No such charge: '${id}'`);
    }
    if (method === 'POST' && path === '/v1/refunds')
      return refund(String(params.payment_intent ?? ''), params.amount === undefined ? undefined : Number(params.amount));
    return stripeError(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path})`);
  }

  async function control(method: string, path: string, params: Params): Promise<Reply> {
    const [, , resource, id, verb] = path.split('/');
    const amount = params.amount === undefined ? undefined : Number(params.amount);
    if (method === 'GET' && resource === 'events') return { status: 200, body: sent };
    if (method !== 'POST') return { status: 405, body: { error: 'method not allowed' } };
    const session = sessions.get(id ?? '');
    if (resource === 'sessions' && session && verb === 'pay') return paySession(session);
    if (resource === 'sessions' && session && verb === 'expire') {
      if (session.status !== 'open') return { status: 409, body: { error: `session is ${String(session.status)}` } };
      session.status = 'expired';
      emit('checkout.session.expired', session);
      return { status: 200, body: session };
    }
    if (resource === 'payment_intents' && verb === 'refund') return refund(id ?? '', amount);
    if (resource === 'payment_intents' && verb === 'dispute') return openDispute(id ?? '', amount);
    if (resource === 'disputes' && verb === 'close') return closeDispute(id ?? '', String(params.status ?? ''));
    if (resource === 'customers' && verb === 'decline') {
      const saved = customers.get(id ?? '');
      if (!saved) return { status: 404, body: { error: 'no such customer' } };
      saved.declines = params.on !== false && params.on !== 'false';
      return { status: 200, body: { customer: id, declines: saved.declines } };
    }
    if (resource === 'faults' && !id) {
      const status = params.status === undefined ? undefined : Number(params.status);
      const delayMs = params.delay_ms === undefined ? undefined : Number(params.delay_ms);
      faults = { times: Math.max(0, Number(params.times ?? 1)), status, delayMs };
      return { status: 200, body: faults };
    }
    if (resource === 'hold' && !id && typeof params.type === 'string') {
      heldTypes.add(params.type);
      return { status: 200, body: { held: [...heldTypes] } };
    }
    if (resource === 'release' && !id && typeof params.type === 'string') return release(params.type);
    if (resource === 'events' && verb === 'resend') return resend(id ?? '', Math.min(50, Math.max(1, Number(params.times ?? 1))));
    return { status: 404, body: { error: 'no such control route' } };
  }

  function page(method: string, path: string): Reply {
    const [, , id, verb] = path.split('/');
    const session = sessions.get(id ?? '');
    if (!session) return { status: 404, html: '<!doctype html><title>Not found</title><p>No such checkout.</p>' };
    if (method === 'GET' && !verb) return { status: 200, html: checkoutPage(session) };
    if (method === 'POST' && verb === 'pay') {
      const paid = paySession(session);
      if (paid.status !== 200) return { status: 409, html: checkoutPage(session) };
      const success = String(session.success_url ?? '').replace('{CHECKOUT_SESSION_ID}', session.id);
      return success ? { status: 303, location: success } : { status: 200, html: checkoutPage(session, 'Paid.') };
    }
    if (method === 'POST' && verb === 'decline') return { status: 402, html: checkoutPage(session, 'Your card was declined.') };
    return { status: 404, html: '<!doctype html><title>Not found</title>' };
  }

  async function readBody(request: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > 64 * 1024) throw new Error('body too large');
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  async function handle(request: IncomingMessage): Promise<Reply> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const method = request.method ?? 'GET';
    const raw = await readBody(request);
    const json = (request.headers['content-type'] ?? '').includes('application/json');
    const params = raw === '' ? {} : json ? (JSON.parse(raw) as Params) : parseStripeForm(raw);
    if (url.pathname.startsWith('/v1/')) {
      const fault = faults.times > 0 ? faults : undefined;
      if (fault) faults = { ...fault, times: fault.times - 1 };
      if (fault?.status !== undefined) return faultReply(fault.status);
      const key = request.headers['idempotency-key'];
      const scoped = typeof key === 'string' && method === 'POST' ? `${url.pathname}:${key}` : undefined;
      const kept = scoped && idempotent.get(scoped);
      const reply = kept || (await api(request, url.pathname, params));
      if (scoped && reply.status < 500) idempotent.set(scoped, reply);
      // Carried out, answered late: the caller may have given up on it.
      if (fault?.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
      return reply;
    }
    if (url.pathname.startsWith('/_sim/')) return control(method, url.pathname, params);
    if (url.pathname.startsWith('/pay/')) return page(method, url.pathname);
    return { status: 404, body: { error: 'not found' } };
  }

  function send(response: ServerResponse, reply: Reply) {
    if (reply.location) {
      response.writeHead(reply.status, { location: reply.location });
      response.end();
    } else if (reply.html !== undefined) {
      response.writeHead(reply.status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      response.end(reply.html);
    } else {
      response.writeHead(reply.status, { 'content-type': 'application/json', 'request-id': newId('req') });
      response.end(JSON.stringify(reply.body ?? {}));
    }
  }

  const server: Server = createServer((request, response) => {
    handle(request).then(
      (reply) => send(response, reply),
      (error: unknown) => send(response, stripeError(400, 'invalid_request_error', String(error))),
    );
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('the payments simulator has no port');
  selfUrl = `http://127.0.0.1:${address.port}`;

  return {
    url: selfUrl,
    secretKey,
    webhookSecret,
    setWebhookUrl: (url) => void (webhookUrl = url),
    events: sent,
    settled: async () => {
      while (deliveries.size > 0) await Promise.allSettled([...deliveries]);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
