import { setCapacityLimit } from '../../shared/store/counters';
import { setBillingState } from '../support/accounts';
import { useTestRuntime } from '../support/runtime';

/**
 * Every refusal text the interface gives for creates and actions, answered by the service and found in the OpenAPI
 * document on that route and status (with `<flavor>` for the flavor sent), so the document says what clients get.
 */
const runtime = useTestRuntime();
const ACTIONS = '/api/v1/instances/{instance_id}/actions';
const CREATE = '/api/v1/instances';

let document: { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> };
beforeAll(async () => {
  document = (await runtime.call('GET', '/api/v1/openapi.json')).body;
});

/** The description of `status` on the route, as the document gives it. */
const described = (path: string, method: string, status: number) =>
  document.paths[path]?.[method]?.responses[String(status)]?.description ?? '';

/** The answered text as the document writes it: the flavor sent is `<flavor>` there. */
const asDocumented = (text: string) => `\`${text.replace(/^Invalid flavor: .*$/, 'Invalid flavor: <flavor>')}\``;

type Case = readonly [why: string, body: Record<string, unknown>, status: number, text: string];

describe('the action route’s refusals', () => {
  const sizes: Case[] = [
    ['an unknown type', { type: 'explode' }, 400, 'Invalid action type'],
    ['a resize without flavor', { type: 'resize' }, 400, 'flavor is required for resize'],
    ['an unknown flavor', { type: 'resize', flavor: 's-9vcpu-1tb' }, 400, 'Invalid flavor: s-9vcpu-1tb'],
    ['the retired flavor', { type: 'resize', flavor: 's-1vcpu-1gb' }, 400, 'Flavor s-1vcpu-1gb is permanently unavailable'],
    ['the current flavor', { type: 'resize', flavor: 's-2vcpu-2gb' }, 400, 'Already on this flavor'],
    ['a smaller disk', { type: 'resize', flavor: 's-1vcpu-2gb' }, 400, 'Cannot downgrade disk size'],
  ];

  it.each(sizes)('answers %s with its text, which the document lists', async (_why, body, status, text) => {
    const { apiKey } = await runtime.newAccount();
    const { instance_id: id } = await runtime.activeInstance(apiKey, 's-2vcpu-2gb');

    const answer = await runtime.call('POST', `/api/v1/instances/${id}/actions`, { apiKey, body });

    expect([answer.status, answer.body.error]).toEqual([status, text]);
    expect(described(ACTIONS, 'post', status)).toContain(asDocumented(text));
  });

  it('answers a paused account, no balance and a full tier with their texts, which the document lists', async () => {
    const paused = await runtime.newAccount();
    const broke = await runtime.newAccount();
    const full = await runtime.newAccount();
    const [pausedOne, brokeOne, fullOne] = await Promise.all([
      runtime.activeInstance(paused.apiKey),
      runtime.activeInstance(broke.apiKey),
      runtime.activeInstance(full.apiKey),
    ]);
    const off = await runtime.call('POST', `/api/v1/instances/${brokeOne.instance_id}/actions`, {
      apiKey: broke.apiKey,
      body: { type: 'power_off' },
    });
    await runtime.waitForJob(broke.apiKey, off.body.job_id);
    await setBillingState(runtime.deps, paused.accountId, { billing_paused: true, balance: 0 });
    await setBillingState(runtime.deps, broke.accountId, { billing_paused: false, balance: 0 });
    await setCapacityLimit(runtime.deps, { kind: 'tier', flavor: 's-16vcpu-32gb' }, 0);

    const answers = [
      await runtime.call('POST', `/api/v1/instances/${pausedOne.instance_id}/actions`, { apiKey: paused.apiKey, body: { type: 'reboot' } }),
      await runtime.call('POST', `/api/v1/instances/${brokeOne.instance_id}/actions`, { apiKey: broke.apiKey, body: { type: 'power_on' } }),
      await runtime.call('POST', `/api/v1/instances/${fullOne.instance_id}/actions`, {
        apiKey: full.apiKey,
        body: { type: 'resize', flavor: 's-16vcpu-32gb' },
      }),
    ];

    expect(answers.map((answer) => [answer.status, answer.body.error])).toEqual([
      [403, 'Instance is billing-paused'],
      [402, 'Insufficient balance to power on'],
      [503, 'Tier capacity exhausted'],
    ]);
    for (const answer of answers) expect(described(ACTIONS, 'post', answer.status)).toContain(asDocumented(answer.body.error));
  });
});

describe('the create route’s refusals', () => {
  it.each([
    ['an unknown flavor', '50', 's-9vcpu-1tb', 400, 'Invalid flavor: s-9vcpu-1tb'],
    ['the retired flavor', '50', 's-1vcpu-1gb', 400, 'Flavor s-1vcpu-1gb is permanently unavailable'],
    ['a balance of $3 or less', '3', 's-1vcpu-2gb', 402, 'Insufficient balance to deploy: the balance must be above $3.00'],
  ] as const)('answers %s with its text, which the document lists', async (_why, depositUsd, flavor, status, text) => {
    const { apiKey } = await runtime.newAccount({ depositUsd });

    const answer = await runtime.call('POST', '/api/v1/instances', { apiKey, body: { project_name: 'texts', flavor } });

    expect([answer.status, answer.body.error]).toEqual([status, text]);
    expect(described(CREATE, 'post', status)).toContain(asDocumented(text));
  });

  it('lists the billing pause only on the action route, the one route that answers it', () => {
    const listing403 = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, operation]) => operation.responses?.['403']?.description.includes('Instance is billing-paused'))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );

    expect(listing403).toEqual([`POST ${ACTIONS}`]);
  });
});
