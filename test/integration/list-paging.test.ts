import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { useTestRuntime } from '../support/runtime';

const runtime = useTestRuntime();

const list = (apiKey: string, query = '') => runtime.call('GET', `/api/v1/instances${query}`, { apiKey });

async function accountWithInstances(count: number) {
  const account = await runtime.newAccount();
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const created = await runtime.call('POST', '/api/v1/instances', {
      apiKey: account.apiKey,
      body: { project_name: `p${i}`, flavor: 's-1vcpu-2gb' },
    });
    ids.push(created.body.instance_id);
  }
  return { ...account, ids };
}

describe('GET /api/v1/instances', () => {
  it('returns every live instance by id without paging parameters, and no Link header', async () => {
    const { apiKey, ids } = await accountWithInstances(3);
    await runtime.call('DELETE', `/api/v1/instances/${ids[1]}`, { apiKey });

    const response = await list(apiKey);

    expect(response.status).toBe(200);
    expect(response.body.map((i: { instance_id: number }) => i.instance_id)).toEqual([ids[0], ids[2]]);
    expect(response.headers.get('link')).toBeNull();
  });

  it('pages with per_page, following Link rel="next" until a page comes without one', async () => {
    const { apiKey, ids } = await accountWithInstances(5);

    const first = await list(apiKey, '?per_page=2');
    const second = await list(apiKey, /^<\/api\/v1\/instances(\?[^>]+)>; rel="next"$/.exec(first.headers.get('link')!)![1]);
    const third = await list(apiKey, /^<\/api\/v1\/instances(\?[^>]+)>; rel="next"$/.exec(second.headers.get('link')!)![1]);

    const idsOf = (r: { body: { instance_id: number }[] }) => r.body.map((i) => i.instance_id);
    expect([idsOf(first), idsOf(second), idsOf(third)]).toEqual([ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)]);
    expect(first.headers.get('link')).toMatch(/^<\/api\/v1\/instances\?per_page=2&page_token=[A-Za-z0-9_-]+>; rel="next"$/);
    expect(third.headers.get('link')).toBeNull();
  });

  it.each([
    ['?per_page=0', 'per_page must be a whole number from 1 to 200'],
    ['?per_page=201', 'per_page must be a whole number from 1 to 200'],
    ['?per_page=ten', 'per_page must be a whole number from 1 to 200'],
    ['?per_page=2.5', 'per_page must be a whole number from 1 to 200'],
    ['?page_token=bm90LWEtdG9rZW4', 'Invalid page_token'],
    [`?page_token=${Buffer.from('after:1').toString('base64url')}x`, 'Invalid page_token'],
    [`?page_token=${'a'.repeat(65)}`, 'Invalid page_token'],
  ])('answers 400 for %s', async (query, error) => {
    const { apiKey } = await runtime.newAccount();

    const response = await list(apiKey, query);

    expect([response.status, response.body.error]).toEqual([400, error]);
  });

  it("never shows another account's instances through a page token taken from it", async () => {
    const owner = await accountWithInstances(2);
    const other = await accountWithInstances(1);
    const link = (await list(owner.apiKey, '?per_page=1')).headers.get('link')!;

    const response = await list(other.apiKey, /^<\/api\/v1\/instances(\?[^>]+)>/.exec(link)![1]);

    expect(response.status).toBe(200);
    expect(response.body.map((i: { instance_id: number }) => i.instance_id).every((id: number) => other.ids.includes(id))).toBe(true);
  });

  it('reads only live instances from the index: a deleted one leaves it', async () => {
    const { apiKey, accountId, ids } = await accountWithInstances(3);
    await runtime.call('DELETE', `/api/v1/instances/${ids[0]}`, { apiKey });
    await runtime.call('DELETE', `/api/v1/instances/${ids[2]}`, { apiKey });

    const { Items = [] } = await runtime.deps.dynamo.send(
      new QueryCommand({
        TableName: runtime.tableNames.instances,
        IndexName: 'live_by_account',
        KeyConditionExpression: 'live_account_id = :account',
        ExpressionAttributeValues: { ':account': accountId },
      }),
    );

    expect(Items.map((item) => item.instance_id)).toEqual([ids[1]]);
  });
});
